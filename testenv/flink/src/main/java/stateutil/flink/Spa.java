package stateutil.flink;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.ListTypeInfo;
import org.apache.flink.api.java.typeutils.MapTypeInfo;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.api.OperatorTransformation;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.SavepointWriter;
import org.apache.flink.state.api.StateBootstrapTransformation;
import org.apache.flink.state.api.functions.BroadcastStateBootstrapFunction;
import org.apache.flink.state.api.functions.StateBootstrapFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

import stateutil.flink.jobs.Jobs;

/**
 * The State Processor API commands. Both read through the hashmap backend (Flink 2.1.0's
 * State Processor API returns duplicate Long keys through RocksDB).
 */
final class Spa {
    private Spa() {}

    /** Subtask of operator-state lines read with the State Processor API, which does not tell. */
    static final int UNKNOWN_SUBTASK = -1;

    static StreamExecutionEnvironment env(Params p) throws Exception {
        Configuration c = Harness.config("hashmap", p.parallelism, new Harness.Opts(new String[0], 0), null);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(c);
        env.setParallelism(p.parallelism);
        return env;
    }

    /**
     * The backend to read with: hashmap, unless the snapshot holds RocksDB's native format
     * (which only RocksDB reads) or --backend says otherwise.
     */
    static org.apache.flink.runtime.state.StateBackend backend(String choice, String snap) throws Exception {
        if (choice.equals("auto")) {
            choice = Metadata.rocksDbNative(snap) ? "rocksdb" : "hashmap";
            if (choice.equals("rocksdb")) {
                System.err.println("flink-harness: note: the snapshot holds RocksDB's native format; reading it through RocksDB");
            }
        }
        switch (choice) {
            case "hashmap": return new HashMapStateBackend();
            case "rocksdb": return Compat.rocksdb();
            default: throw new Harness.UsageException("--backend must be auto, hashmap or rocksdb");
        }
    }

    static int dump(Harness.Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        String snap = Harness.uri(o.get("snapshot"));
        Path dump = Paths.get(o.get("dump"));
        Params p = Harness.params(o);
        String backend = o.get("backend", "auto");
        Harness.UidRename rename = Harness.UidRename.parse(o.get("rename-uid", ""));
        // --without-operator: an operator the snapshot no longer has is not read.
        String without = o.get("without-operator", "");
        // --unsorted: each line is written as it comes, so that memory stays bounded (benchmarks).
        boolean unsorted = o.flag("unsorted");
        o.done();
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = env(p);
        SavepointReader r = SavepointReader.read(env, snap, backend(backend, snap));
        DataStream<String> all = null;
        for (KeyedSpec ks : job.keyed(p)) {
            if (ks.uid.equals(without)) {
                continue;
            }
            refuseUnnamed(job, ks);
            DataStream<String> s = readKeyed(r, ks, rename.uid(ks.uid), new LineReader(ks), Types.STRING);
            all = all == null ? s : all.union(s);
        }
        for (OperatorStateSpec os : job.operatorStates(p)) {
            if (os.uid.equals(without)) {
                continue;
            }
            DataStream<String> s = readOperator(r, os, rename.uid(os.uid)).map(new OperatorLine(os)).returns(Types.STRING);
            all = all == null ? s : all.union(s);
        }
        long n = 0;
        if (unsorted) {
            try (BufferedWriter w = Files.newBufferedWriter(dump, StandardCharsets.UTF_8)) {
                if (all != null) {
                    try (CloseableIterator<String> it = all.executeAndCollect("stateutil-spa-dump-" + job.name())) {
                        for (; it.hasNext(); n++) {
                            w.write(rename.line(it.next()));
                            w.write('\n');
                        }
                    }
                }
            }
        } else {
            List<String> lines = new ArrayList<>();
            if (all != null) {
                try (CloseableIterator<String> it = all.executeAndCollect("stateutil-spa-dump-" + job.name())) {
                    it.forEachRemaining(lines::add);
                }
            }
            Harness.writeDump(dump, rename.lines(lines));
            n = lines.size();
        }
        System.err.printf("flink-harness: State Processor API read %d lines in %.1fs%n", n, (System.nanoTime() - t0) / 1e9);
        return 0;
    }

    /**
     * Counts every keyed entry of the job's keyed operators per key group (a value a key, a
     * list's elements, a map's entries), as a batch job that sums per key group, and writes
     * "KEY_GROUP COUNT" lines in key-group order.
     */
    static int count(Harness.Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        String snap = Harness.uri(o.get("snapshot"));
        Path out = Paths.get(o.get("out"));
        int maxParallelism = Integer.parseInt(o.get("max-parallelism", "128"));
        Params p = Harness.params(o);
        String backend = o.get("backend", "auto");
        o.done();
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = env(p);
        env.setRuntimeMode(org.apache.flink.api.common.RuntimeExecutionMode.BATCH);
        SavepointReader r = SavepointReader.read(env, snap, backend(backend, snap));
        DataStream<Tuple2<Integer, Long>> all = null;
        for (KeyedSpec ks : job.keyed(p)) {
            refuseUnnamed(job, ks);
            DataStream<Tuple2<Integer, Long>> s = readKeyed(r, ks, new KeyGroupCounter(ks, maxParallelism), Types.TUPLE(Types.INT, Types.LONG));
            all = all == null ? s : all.union(s);
        }
        TreeMap<Integer, Long> counts = new TreeMap<>();
        if (all != null) {
            try (CloseableIterator<Tuple2<Integer, Long>> it = all.keyBy(t -> t.f0).sum(1).executeAndCollect("stateutil-spa-count-" + job.name())) {
                while (it.hasNext()) {
                    Tuple2<Integer, Long> t = it.next();
                    counts.merge(t.f0, t.f1, Long::sum);
                }
            }
        }
        try (BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
            for (Map.Entry<Integer, Long> e : counts.entrySet()) {
                w.write(e.getKey() + " " + e.getValue() + "\n");
            }
        }
        System.err.printf("flink-harness: State Processor API counted %d key groups in %.1fs%n", counts.size(), (System.nanoTime() - t0) / 1e9);
        return 0;
    }

    /** The states of spec, registered through a reader's runtime context. */
    static List<State> register(KeyedSpec spec, RuntimeContext ctx) {
        List<State> states = new ArrayList<>();
        for (StateDef d : spec.states) {
            states.add(d.get(ctx));
        }
        return states;
    }

    /** Each key's entries, as (its key group, how many). */
    static final class KeyGroupCounter extends SpaReaderBase<Object, Tuple2<Integer, Long>> {
        private static final long serialVersionUID = 1L;
        private final KeyedSpec spec;
        private final int maxParallelism;
        private transient List<State> states;

        KeyGroupCounter(KeyedSpec spec, int maxParallelism) {
            this.spec = spec;
            this.maxParallelism = maxParallelism;
        }

        @Override
        protected void setup(RuntimeContext ctx) {
            states = register(spec, ctx);
        }

        @Override
        public void readKey(Object key, Context ctx, Collector<Tuple2<Integer, Long>> out) throws Exception {
            long n = 0;
            for (int i = 0; i < states.size(); i++) {
                Object v = spec.states.get(i).read(states.get(i));
                if (v instanceof java.util.Collection) {
                    n += ((java.util.Collection<?>) v).size();
                } else if (v instanceof Map) {
                    n += ((Map<?, ?>) v).size();
                } else if (v != null) {
                    n++;
                }
            }
            if (n > 0) {
                out.collect(Tuple2.of(org.apache.flink.runtime.state.KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism), n));
            }
        }
    }

    static <OUT> DataStream<OUT> readKeyed(SavepointReader r, KeyedSpec ks, SpaReaderBase<?, OUT> f, TypeInformation<OUT> out) throws Exception {
        return readKeyed(r, ks, ks.uid, f, out);
    }

    /** The keyed state of ks read from the operator of uid (ks.uid unless renamed). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static <OUT> DataStream<OUT> readKeyed(SavepointReader r, KeyedSpec ks, String uid, SpaReaderBase<?, OUT> f, TypeInformation<OUT> out) throws Exception {
        return SpaOps.readKeyed(r, uid, (SpaReaderBase) f, (TypeInformation) ks.keyType, out);
    }

    /** The operator state's elements (split/union) or entries as Tuple2 (broadcast), as Objects. */
    static DataStream<Object> readOperator(SavepointReader r, OperatorStateSpec os) throws Exception {
        return readOperator(r, os, os.uid);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static DataStream<Object> readOperator(SavepointReader r, OperatorStateSpec os, String uid) throws Exception {
        switch (os.mode) {
            case SPLIT: return (DataStream) SpaOps.readList(r, uid, os.name, os.type);
            case UNION: return (DataStream) SpaOps.readUnion(r, uid, os.name, os.type);
            default: return (DataStream) SpaOps.readBroadcast(r, uid, os.name, os.keyType, os.type);
        }
    }

    /** Every state and timer of one key as dump lines. */
    static final class LineReader extends SpaReaderBase<Object, String> {
        private static final long serialVersionUID = 1L;
        private final KeyedSpec spec;
        private transient List<State> states;

        LineReader(KeyedSpec spec) {
            this.spec = spec;
        }

        @Override
        protected void setup(RuntimeContext ctx) {
            states = register(spec, ctx);
        }

        @Override
        public void readKey(Object key, Context ctx, Collector<String> out) throws Exception {
            Object k = spec.key(key);
            for (int i = 0; i < states.size(); i++) {
                StateDef d = spec.states.get(i);
                TreeMap<String, Object> line = d.line(spec.uid, k, d.read(states.get(i)));
                if (line != null) {
                    out.collect(Json.render(line));
                }
            }
            if (spec.timers) {
                for (long t : ctx.registeredEventTimeTimers()) {
                    out.collect(Json.render(Dumps.keyed("timer", k, spec.uid, "event-time", t)));
                }
                for (long t : ctx.registeredProcessingTimeTimers()) {
                    out.collect(Json.render(Dumps.keyed("timer", k, spec.uid, "processing-time", t)));
                }
            }
        }
    }

    static final class OperatorLine implements MapFunction<Object, String> {
        private static final long serialVersionUID = 1L;
        private final OperatorStateSpec os;

        OperatorLine(OperatorStateSpec os) {
            this.os = os;
        }

        @Override
        public String map(Object v) {
            String kind = os.mode.name().toLowerCase();
            if (os.mode == OperatorStateSpec.Mode.BROADCAST) {
                Tuple2<?, ?> t = (Tuple2<?, ?>) v;
                TreeMap<String, Object> kv = Json.obj();
                kv.put("key", Json.enc(t.f0, os.keyType));
                kv.put("value", Json.enc(t.f1, os.type));
                return Json.render(Dumps.operator(kind, os.uid, os.name, UNKNOWN_SUBTASK, kv));
            }
            return Json.render(Dumps.operator(kind, os.uid, os.name, UNKNOWN_SUBTASK, Json.enc(v, os.type)));
        }
    }

    // ---- spa-rewrite ------------------------------------------------------------------------

    static int rewrite(Harness.Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        String snap = Harness.uri(o.get("snapshot"));
        int maxP = Integer.parseInt(o.get("max-parallelism"));
        String out = Harness.uri(o.get("out"));
        Params p = Harness.params(o);
        String backend = o.get("backend", "auto");
        o.done();
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = env(p);
        // The writer uses the reader's backend: hashmap holds all state on the heap, RocksDB
        // (--backend rocksdb) does not, which big snapshots need. Both write canonical savepoints.
        org.apache.flink.runtime.state.StateBackend sb = backend(backend, snap);
        SavepointReader r = SavepointReader.read(env, snap, sb);
        SavepointWriter w = SpaOps.newSavepoint(env, sb, maxP);
        for (KeyedSpec ks : job.keyed(p)) {
            refuseUnnamed(job, ks);
            RowTypeInfo rt = rowType(ks);
            DataStream<Row> rows = readKeyed(r, ks, new RowReader(ks), rt);
            StateBootstrapTransformation<Row> t = OperatorTransformation.bootstrapWith(rows)
                    .keyBy(new RowKey(ks.keyType), (TypeInformation) ks.keyType)
                    .transform(new RowWriter(ks));
            w = SpaOps.withOperator(w, ks.uid, t);
        }
        Map<String, List<OperatorStateSpec>> byUid = new LinkedHashMap<>();
        for (OperatorStateSpec os : job.operatorStates(p)) {
            byUid.computeIfAbsent(os.uid, k -> new ArrayList<>()).add(os);
        }
        for (Map.Entry<String, List<OperatorStateSpec>> e : byUid.entrySet()) {
            w = SpaOps.withOperator(w, e.getKey(), operatorTransformation(r, e.getValue()));
        }
        w.write(out);
        env.execute("stateutil-spa-rewrite-" + job.name());
        double s = (System.nanoTime() - t0) / 1e9;
        System.err.printf("flink-harness: State Processor API rewrote %s at max parallelism %d in %.1fs%n", Harness.display(snap), maxP, s);
        Harness.OUT.println(Harness.display(out));
        Harness.OUT.printf("elapsed_seconds %.3f%n", s);
        return 0;
    }

    /** (key, each state's value, event-time timers, processing-time timers). */
    static RowTypeInfo rowType(KeyedSpec ks) {
        List<TypeInformation<?>> t = new ArrayList<>();
        t.add(ks.keyType);
        for (StateDef d : ks.states) {
            switch (d.kind) {
                case LIST -> t.add(new ListTypeInfo<>(d.type));
                case MAP -> t.add(new MapTypeInfo<>(d.mapKeyType, d.type));
                default -> t.add(d.type);
            }
        }
        t.add(new ListTypeInfo<>(Types.LONG));
        t.add(new ListTypeInfo<>(Types.LONG));
        return new RowTypeInfo(t.toArray(new TypeInformation<?>[0]));
    }

    static final class RowKey implements KeySelector<Row, Object>, ResultTypeQueryable<Object> {
        private static final long serialVersionUID = 1L;
        private final TypeInformation<?> keyType;

        RowKey(TypeInformation<?> keyType) {
            this.keyType = keyType;
        }

        @Override
        public Object getKey(Row r) {
            return r.getField(0);
        }

        @SuppressWarnings("unchecked")
        @Override
        public TypeInformation<Object> getProducedType() {
            return (TypeInformation<Object>) keyType;
        }
    }

    static final class RowReader extends SpaReaderBase<Object, Row> {
        private static final long serialVersionUID = 1L;
        private final KeyedSpec spec;
        private transient List<State> states;

        RowReader(KeyedSpec spec) {
            this.spec = spec;
        }

        @Override
        protected void setup(RuntimeContext ctx) {
            states = register(spec, ctx);
        }

        @Override
        public void readKey(Object key, Context ctx, Collector<Row> out) throws Exception {
            int n = spec.states.size();
            Row row = new Row(n + 3);
            row.setField(0, key);
            for (int i = 0; i < n; i++) {
                row.setField(1 + i, spec.states.get(i).read(states.get(i)));
            }
            row.setField(n + 1, new ArrayList<>(spec.timers ? ctx.registeredEventTimeTimers() : List.of()));
            row.setField(n + 2, new ArrayList<>(spec.timers ? ctx.registeredProcessingTimeTimers() : List.of()));
            out.collect(row);
        }
    }

    /** Writes a key's row back: the same descriptors (aggregating: one that adds accumulators). */
    static final class RowWriter extends SpaWriterBase<Object, Row> {
        private static final long serialVersionUID = 1L;
        private final KeyedSpec spec;
        private transient List<State> states;

        RowWriter(KeyedSpec spec) {
            this.spec = spec;
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        @Override
        protected void setup(RuntimeContext ctx) {
            states = new ArrayList<>();
            for (StateDef d : spec.states) {
                if (d.kind == StateDef.Kind.AGGREGATING) {
                    AggregatingStateDescriptor orig = (AggregatingStateDescriptor) d.desc;
                    states.add(ctx.getAggregatingState(new AggregatingStateDescriptor<>(
                            d.name, new AccumulatorAdder(orig.getAggregateFunction()), (TypeInformation) d.type)));
                } else {
                    states.add(d.get(ctx));
                }
            }
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        @Override
        public void processElement(Row row, Context ctx) throws Exception {
            int n = spec.states.size();
            for (int i = 0; i < n; i++) {
                Object v = row.getField(1 + i);
                if (v == null) {
                    continue;
                }
                State s = states.get(i);
                switch (spec.states.get(i).kind) {
                    case VALUE -> ((ValueState) s).update(v);
                    case LIST -> ((ListState) s).update((List) v);
                    case MAP -> ((MapState) s).putAll((Map) v);
                    case REDUCING -> ((ReducingState) s).add(v);
                    case AGGREGATING -> ((AggregatingState) s).add(v);
                }
            }
            for (Object t : (List<?>) row.getField(n + 1)) {
                ctx.timerService().registerEventTimeTimer((Long) t);
            }
            for (Object t : (List<?>) row.getField(n + 2)) {
                ctx.timerService().registerProcessingTimeTimer((Long) t);
            }
        }
    }

    /** Takes accumulators as input: adding one to an empty state stores it unchanged. */
    static final class AccumulatorAdder<ACC> implements AggregateFunction<ACC, ACC, ACC> {
        private static final long serialVersionUID = 1L;
        private final AggregateFunction<?, ACC, ?> f;

        AccumulatorAdder(AggregateFunction<?, ACC, ?> f) {
            this.f = f;
        }

        @Override
        public ACC createAccumulator() {
            return f.createAccumulator();
        }

        @Override
        public ACC add(ACC in, ACC acc) {
            return f.merge(in, acc);
        }

        @Override
        public ACC getResult(ACC acc) {
            return acc;
        }

        @Override
        public ACC merge(ACC a, ACC b) {
            return f.merge(a, b);
        }
    }

    /** One operator's split/union states (rows: state index, then one field per state) or its broadcast states. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static StateBootstrapTransformation<?> operatorTransformation(SavepointReader r, List<OperatorStateSpec> states) throws Exception {
        boolean broadcast = states.get(0).mode == OperatorStateSpec.Mode.BROADCAST;
        for (OperatorStateSpec os : states) {
            if ((os.mode == OperatorStateSpec.Mode.BROADCAST) != broadcast) {
                throw new IllegalArgumentException("operator " + os.uid + " mixes broadcast and list state");
            }
        }
        List<TypeInformation<?>> ft = new ArrayList<>();
        ft.add(Types.INT);
        for (OperatorStateSpec os : states) {
            ft.add(broadcast ? new org.apache.flink.api.java.typeutils.TupleTypeInfo<>(os.keyType, os.type) : os.type);
        }
        RowTypeInfo rt = new RowTypeInfo(ft.toArray(new TypeInformation<?>[0]));
        DataStream<Row> rows = null;
        for (int i = 0; i < states.size(); i++) {
            DataStream<Row> s = readOperator(r, states.get(i)).map(new Tag(i, states.size())).returns(rt);
            rows = rows == null ? s : rows.union(s);
        }
        if (broadcast) {
            return OperatorTransformation.bootstrapWith(rows).transform(new BroadcastWriter(states));
        }
        return OperatorTransformation.bootstrapWith(rows).transform(new ListWriter(states));
    }

    static final class Tag implements MapFunction<Object, Row> {
        private static final long serialVersionUID = 1L;
        private final int index;
        private final int count;

        Tag(int index, int count) {
            this.index = index;
            this.count = count;
        }

        @Override
        public Row map(Object v) {
            Row row = new Row(count + 1);
            row.setField(0, index);
            row.setField(1 + index, v);
            return row;
        }
    }

    static final class ListWriter extends StateBootstrapFunction<Row> {
        private static final long serialVersionUID = 1L;
        private final List<OperatorStateSpec> specs;
        private transient List<ListState<Object>> states;

        ListWriter(List<OperatorStateSpec> specs) {
            this.specs = specs;
        }

        @Override
        public void processElement(Row row, Context ctx) throws Exception {
            int i = (Integer) row.getField(0);
            states.get(i).add(row.getField(1 + i));
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            states = new ArrayList<>();
            for (OperatorStateSpec os : specs) {
                ListStateDescriptor d = new ListStateDescriptor(os.name, os.type);
                states.add(os.mode == OperatorStateSpec.Mode.UNION
                        ? ctx.getOperatorStateStore().getUnionListState(d)
                        : ctx.getOperatorStateStore().getListState(d));
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) {}
    }

    static final class BroadcastWriter extends BroadcastStateBootstrapFunction<Row> {
        private static final long serialVersionUID = 1L;
        private final List<OperatorStateSpec> specs;

        BroadcastWriter(List<OperatorStateSpec> specs) {
            this.specs = specs;
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        @Override
        public void processElement(Row row, Context ctx) throws Exception {
            int i = (Integer) row.getField(0);
            OperatorStateSpec os = specs.get(i);
            Tuple2<?, ?> kv = (Tuple2<?, ?>) row.getField(1 + i);
            ctx.getBroadcastState(new MapStateDescriptor(os.name, os.keyType, os.type)).put(kv.f0, kv.f1);
        }
    }

    /** The State Processor API reads state by descriptor: an operator the job names none of cannot be read. */
    static void refuseUnnamed(Job job, KeyedSpec ks) throws Harness.UsageException {
        if (ks.states.isEmpty()) {
            throw new Harness.UsageException("job " + job.name() + ": operator " + ks.uid
                    + " keeps state the job has no descriptors for (the Table planner's); its dump view reads it");
        }
    }
}
