package stateutil.flink.jobs;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.BroadcastStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.util.Collector;

import stateutil.flink.Compat;
import stateutil.flink.DumpingKeyedOperator;
import stateutil.flink.Dumps;
import stateutil.flink.Job;
import stateutil.flink.Json;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * Every kind of state Flink has, small. Topology (uids in quotes):
 *
 * <pre>
 * "source" (FLIP-27, 4 partitions) -> "offsets" (split + union operator list state)
 *   -> "broadcast" (broadcast state "rules", fed by "rules-source", 8 rules, parallelism 1)
 *   -> keyBy "user-&lt;r % keys&gt;" -> "keyed" (value, list, map, reducing, aggregating, TTL'd value,
 *      event-time and processing-time timers)
 * </pre>
 */
public final class BasicJob implements Job {
    public static final String KEYED = "keyed";
    public static final String OFFSETS = "offsets";
    public static final String BROADCAST = "broadcast";
    public static final int RULES = 8;
    /** Event-time timers: 1_000_000 + ((r / keys) % 5) * 1000. */
    public static final long TIMER_BASE = 1_000_000L;
    /** Processing-time timer of every key: 2100-01-01, never fires. */
    public static final long FAR_FUTURE = 4_102_444_800_000L;

    // Methods, not constants: a restore can rename a descriptor (StateDef.renameDescriptor)
    // after this class is loaded.
    static ListStateDescriptor<Tuple2<Integer, Long>> split() {
        return new ListStateDescriptor<>(StateDef.descName("partition-offsets"), Types.TUPLE(Types.INT, Types.LONG));
    }

    static ListStateDescriptor<String> union() {
        return new ListStateDescriptor<>(StateDef.descName("subtask-summary"), Types.STRING);
    }

    static MapStateDescriptor<String, String> rules() {
        return new MapStateDescriptor<>(StateDef.descName("rules"), Types.STRING, Types.STRING);
    }

    @Override
    public String name() {
        return "basic";
    }

    static KeyedSpec spec() {
        StateTtlConfig ttl = Compat.ttl(Jobs.ttl(Duration.ofDays(1)))
                .setUpdateType(StateTtlConfig.UpdateType.OnCreateAndWrite)
                .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                .build();
        List<StateDef> states = List.of(
                StateDef.value("count", Types.LONG),
                StateDef.list("events", Types.STRING),
                StateDef.map("by-bucket", Types.STRING, Types.LONG),
                StateDef.reducing("sum", (a, b) -> a + b, Types.LONG),
                StateDef.aggregating("avg", new SumCount(), Types.TUPLE(Types.LONG, Types.LONG)),
                StateDef.value("last", Types.STRING).withTtl(ttl));
        return new KeyedSpec(KEYED, Types.STRING, states, true);
    }

    @Override
    public List<KeyedSpec> keyed(Params p) {
        return List.of(spec());
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(
                Jobs.sourceState("source"),
                Jobs.sourceState("rules-source"),
                new OperatorStateSpec(OFFSETS, split().getName(), OperatorStateSpec.Mode.SPLIT, Types.TUPLE(Types.INT, Types.LONG), null),
                new OperatorStateSpec(OFFSETS, union().getName(), OperatorStateSpec.Mode.UNION, Types.STRING, null),
                new OperatorStateSpec(BROADCAST, rules().getName(), OperatorStateSpec.Mode.BROADCAST, Types.STRING, Types.STRING));
    }

    @Override
    public Map<String, Long> expected(Params p) {
        return Map.of(KEYED, p.records, BROADCAST, (long) RULES * p.parallelism);
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        long keys = Jobs.keys(p, 10);
        KeyedSpec spec = spec();
        BroadcastStream<Long> rules = Jobs.source(env, "rules-source", RULES, 1).setParallelism(1).broadcast(rules());
        DataStream<Long> records = Jobs.source(env, "source", p.records, Jobs.PARTITIONS)
                .map(new Offsets()).uid(OFFSETS).name(OFFSETS)
                .connect(rules).process(new Rules()).uid(BROADCAST).name(BROADCAST);
        records.keyBy(r -> "user-" + (r % keys), Types.STRING)
                .transform(KEYED, Types.LONG, new DumpingKeyedOperator<>(new Keyed(spec, keys), spec))
                .uid(KEYED);
    }

    /** Aggregate (sum, count); the result is the accumulator itself. */
    public static final class SumCount implements AggregateFunction<Long, Tuple2<Long, Long>, Tuple2<Long, Long>> {
        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Long v, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + v, acc.f1 + 1);
        }

        @Override
        public Tuple2<Long, Long> getResult(Tuple2<Long, Long> acc) {
            return acc;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    static final class Keyed extends KeyedProcessFunction<String, Long, Long> {
        private final KeyedSpec spec;
        private final long keys;
        private transient ValueState<Long> count;
        private transient ListState<String> events;
        private transient MapState<String, Long> byBucket;
        private transient ReducingState<Long> sum;
        private transient AggregatingState<Long, Tuple2<Long, Long>> avg;
        private transient ValueState<String> last;

        Keyed(KeyedSpec spec, long keys) {
            this.spec = spec;
            this.keys = keys;
        }

        @SuppressWarnings("unchecked")
        @Override
        public void processElement(Long r, Context ctx, Collector<Long> out) throws Exception {
            if (count == null) {
                count = (ValueState<Long>) spec.state("count").get(getRuntimeContext());
                events = (ListState<String>) spec.state("events").get(getRuntimeContext());
                byBucket = (MapState<String, Long>) spec.state("by-bucket").get(getRuntimeContext());
                sum = (ReducingState<Long>) spec.state("sum").get(getRuntimeContext());
                avg = (AggregatingState<Long, Tuple2<Long, Long>>) spec.state("avg").get(getRuntimeContext());
                last = (ValueState<String>) spec.state("last").get(getRuntimeContext());
            }
            Long c = count.value();
            count.update(c == null ? 1 : c + 1);
            events.add("e" + r);
            String bucket = "b" + (r % 3);
            Long b = byBucket.get(bucket);
            byBucket.put(bucket, b == null ? r : b + r);
            sum.add(r);
            avg.add(r);
            last.update("e" + r);
            ctx.timerService().registerEventTimeTimer(TIMER_BASE + ((r / keys) % 5) * 1000);
            ctx.timerService().registerProcessingTimeTimer(FAR_FUTURE);
            Dumps.counter(KEYED).incrementAndGet();
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Long> out) {}
    }

    /** Split list state: records seen per partition; union list state: one summary per subtask. */
    static final class Offsets extends RichMapFunction<Long, Long> implements CheckpointedFunction {
        private transient ListState<Tuple2<Integer, Long>> split;
        private transient ListState<String> union;
        private transient TreeMap<Integer, Long> seen;
        private transient long total;

        @Override
        public Long map(Long r) {
            seen.merge((int) (r % Jobs.PARTITIONS), 1L, Long::sum);
            total++;
            return r;
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            OperatorStateStore store = ctx.getOperatorStateStore();
            split = store.getListState(split());
            union = store.getUnionListState(union());
            seen = new TreeMap<>();
            if (ctx.isRestored()) {
                for (Tuple2<Integer, Long> t : split.get()) {
                    seen.merge(t.f0, t.f1, Long::sum);
                }
                if (Dumps.mode == Dumps.Mode.RESTORE) {
                    dump(-1);
                }
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            List<Tuple2<Integer, Long>> l = new ArrayList<>();
            seen.forEach((k, v) -> l.add(Tuple2.of(k, v)));
            split.update(l);
            union.update(List.of("subtask-" + Compat.subtask(getRuntimeContext()) + " records=" + total));
            if (Dumps.mode == Dumps.Mode.SNAPSHOT) {
                dump(ctx.getCheckpointId());
            }
        }

        private void dump(long checkpointId) throws Exception {
            int sub = Compat.subtask(getRuntimeContext());
            TypeInformation<Tuple2<Integer, Long>> tt = Types.TUPLE(Types.INT, Types.LONG);
            for (Tuple2<Integer, Long> t : split.get()) {
                Dumps.line(checkpointId, Dumps.operator("split", OFFSETS, split().getName(), sub, Json.enc(t, tt)));
            }
            for (String s : union.get()) {
                Dumps.line(checkpointId, Dumps.operator("union", OFFSETS, union().getName(), sub, s));
            }
        }
    }

    /** Broadcast state "rules": rule-i -> threshold=10*i, one copy per subtask. */
    static final class Rules extends BroadcastProcessFunction<Long, Long, Long> implements CheckpointedFunction {
        private transient OperatorStateStore store;

        @Override
        public void processElement(Long r, ReadOnlyContext ctx, Collector<Long> out) {
            out.collect(r);
        }

        @Override
        public void processBroadcastElement(Long r, Context ctx, Collector<Long> out) throws Exception {
            ctx.getBroadcastState(rules()).put("rule-" + r, "threshold=" + (10 * r));
            Dumps.counter(BROADCAST).incrementAndGet();
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            store = ctx.getOperatorStateStore();
            if (ctx.isRestored() && Dumps.mode == Dumps.Mode.RESTORE) {
                dump(-1);
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            if (Dumps.mode == Dumps.Mode.SNAPSHOT) {
                dump(ctx.getCheckpointId());
            }
        }

        private void dump(long checkpointId) throws Exception {
            int sub = Compat.subtask(getRuntimeContext());
            BroadcastState<String, String> bs = store.getBroadcastState(rules());
            for (Map.Entry<String, String> e : bs.entries()) {
                TreeMap<String, Object> kv = Json.obj();
                kv.put("key", e.getKey());
                kv.put("value", e.getValue());
                Dumps.line(checkpointId, Dumps.operator("broadcast", BROADCAST, rules().getName(), sub, kv));
            }
        }
    }
}
