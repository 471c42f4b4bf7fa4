package stateutil.flink.jobs;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.CoGroupFunction;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple0;
import org.apache.flink.api.java.tuple.Tuple5;
import org.apache.flink.api.java.typeutils.TupleTypeInfo;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.windowing.assigners.GlobalWindows;
import org.apache.flink.streaming.api.windowing.triggers.CountTrigger;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

import stateutil.flink.Compat;
import stateutil.flink.Dumps;
import stateutil.flink.Job;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;
import stateutil.flink.RestoredStateDumper;

/**
 * DataStream windows on String keys "w-&lt;r % keys&gt;", record r at event time r seconds,
 * with no watermark, so that no window fires and the snapshot holds every window's contents
 * and timers: a tumbling window aggregate (an AggregatingState of Tuple2 under TimeWindow
 * namespaces), a sliding window with a ProcessWindowFunction (a ListState of Tuple5 elements),
 * a global window with a count trigger (a ReducingState and the trigger's count under the
 * GlobalWindow namespace), a coGroup (a ListState of TaggedUnion), and a keyed function keeping
 * a Tuple0 and a Tuple5. Flink's window operators cannot dump themselves: Flink restores the
 * snapshot into a dump view that dumps every state by (key, namespace).
 */
public final class WindowsJob implements Job {
    static final String SOURCE = "source", RECORDS = "records";
    static final String[] KEYED = {"tumbling", "sliding", "global", "cogroup", "tuples"};

    @Override
    public String name() {
        return "windows";
    }

    @Override
    public Map<String, Long> expected(Params p) {
        return Map.of(RECORDS, p.records);
    }

    @Override
    public List<KeyedSpec> keyed(Params p) {
        return List.of();
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(Jobs.sourceState(SOURCE));
    }

    @Override
    public String dumpNote() {
        return "Flink restores the snapshot into a dump view whose operators dump every state and timer";
    }

    static long keys(Params p) {
        return Jobs.keys(p, 10);
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        long keys = keys(p);
        DataStream<Long> src = Jobs.source(env, SOURCE, p.records, Jobs.PARTITIONS,
                        WatermarkStrategy.<Long>noWatermarks().withTimestampAssigner((r, ts) -> r * 1000))
                .map(new Count()).uid("count").name("count");
        Key key = new Key(keys);
        src.keyBy(key, Types.STRING)
                .window(Compat.tumbling(Duration.ofSeconds(10)))
                .aggregate(new BasicJob.SumCount(), Types.TUPLE(Types.LONG, Types.LONG), Types.TUPLE(Types.LONG, Types.LONG))
                .uid("tumbling").name("tumbling");
        TypeInformation<Tuple5<String, Long, Integer, Double, Boolean>> t5 =
                Types.TUPLE(Types.STRING, Types.LONG, Types.INT, Types.DOUBLE, Types.BOOLEAN);
        src.map(new ToTuple5(keys)).uid("to-tuple5").name("to-tuple5").returns(t5)
                .keyBy(new Tuple5Key(), Types.STRING)
                .window(Compat.sliding(Duration.ofSeconds(20), Duration.ofSeconds(10)))
                .process(new CountWindow(), Types.LONG)
                .uid("sliding").name("sliding");
        src.keyBy(key, Types.STRING)
                .window(GlobalWindows.create())
                .trigger(CountTrigger.of(1_000_000))
                .reduce(new Sum())
                .uid("global").name("global");
        DataStream<Long> even = src.filter(new Even(true)).uid("even").name("even");
        DataStream<String> odd = src.filter(new Even(false)).uid("odd").name("odd").map(new Label()).uid("label").name("label");
        // Flink 1.x declares a DataStream, but the window operator's stream is returned.
        ((SingleOutputStreamOperator<Long>) even.coGroup(odd).where(key, Types.STRING).equalTo(new LabelKey(keys), Types.STRING)
                .window(Compat.tumbling(Duration.ofSeconds(10)))
                .apply(new Pairs(), Types.LONG))
                .uid("cogroup").name("cogroup");
        src.keyBy(key, Types.STRING).process(new Tuples(), Types.LONG).uid("tuples").name("tuples");
    }

    @Override
    public DumpView dumpView() {
        return WindowsJob::buildDumpView;
    }

    /** One RestoredStateDumper per keyed operator, on String keys, under its uid. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void buildDumpView(StreamExecutionEnvironment env, Params p) {
        DataStream<Long> src = Jobs.source(env, SOURCE, p.records, Jobs.PARTITIONS);
        for (String uid : KEYED) {
            src.keyBy(new Key(keys(p)), Types.STRING)
                    .transform(uid, Types.LONG, (OneInputStreamOperator) new RestoredStateDumper<String>(uid))
                    .uid(uid);
        }
    }

    static final class Count implements MapFunction<Long, Long> {
        @Override
        public Long map(Long r) {
            Dumps.counter(RECORDS).incrementAndGet();
            return r;
        }
    }

    static final class Key implements KeySelector<Long, String> {
        private final long keys;

        Key(long keys) {
            this.keys = keys;
        }

        @Override
        public String getKey(Long r) {
            return "w-" + (r % keys);
        }
    }

    static final class ToTuple5 implements MapFunction<Long, Tuple5<String, Long, Integer, Double, Boolean>> {
        private final long keys;

        ToTuple5(long keys) {
            this.keys = keys;
        }

        @Override
        public Tuple5<String, Long, Integer, Double, Boolean> map(Long r) {
            return Tuple5.of("w-" + (r % keys), r, (int) (r % 7), r / 4.0, r % 2 == 0);
        }
    }

    static final class Tuple5Key implements KeySelector<Tuple5<String, Long, Integer, Double, Boolean>, String> {
        @Override
        public String getKey(Tuple5<String, Long, Integer, Double, Boolean> t) {
            return t.f0;
        }
    }

    static final class CountWindow extends ProcessWindowFunction<Tuple5<String, Long, Integer, Double, Boolean>, Long, String, TimeWindow> {
        @Override
        public void process(String key, Context ctx, Iterable<Tuple5<String, Long, Integer, Double, Boolean>> in, Collector<Long> out) {
            long n = 0;
            for (Tuple5<String, Long, Integer, Double, Boolean> t : in) {
                n++;
            }
            out.collect(n);
        }
    }

    static final class Sum implements ReduceFunction<Long> {
        @Override
        public Long reduce(Long a, Long b) {
            return a + b;
        }
    }

    static final class Even implements FilterFunction<Long> {
        private final boolean even;

        Even(boolean even) {
            this.even = even;
        }

        @Override
        public boolean filter(Long r) {
            return (r % 2 == 0) == even;
        }
    }

    static final class Label implements MapFunction<Long, String> {
        @Override
        public String map(Long r) {
            return r + "";
        }
    }

    static final class LabelKey implements KeySelector<String, String> {
        private final long keys;

        LabelKey(long keys) {
            this.keys = keys;
        }

        @Override
        public String getKey(String label) {
            return "w-" + (Long.parseLong(label) % keys);
        }
    }

    static final class Pairs implements CoGroupFunction<Long, String, Long> {
        @Override
        public void coGroup(Iterable<Long> a, Iterable<String> b, Collector<Long> out) {
            out.collect(0L);
        }
    }

    /** Keeps a Tuple0 and the key's last record as a Tuple5. */
    static final class Tuples extends KeyedProcessFunction<String, Long, Long> {
        private transient ValueState<Tuple0> unit;
        private transient ValueState<Tuple5<String, Long, Integer, Double, Boolean>> last;

        @Override
        public void processElement(Long r, Context ctx, Collector<Long> out) throws Exception {
            if (unit == null) {
                unit = getRuntimeContext().getState(new ValueStateDescriptor<>("tuple0", new TupleTypeInfo<Tuple0>(Tuple0.class)));
                last = getRuntimeContext().getState(new ValueStateDescriptor<>("tuple5",
                        Types.TUPLE(Types.STRING, Types.LONG, Types.INT, Types.DOUBLE, Types.BOOLEAN)));
            }
            unit.update(Tuple0.INSTANCE);
            last.update(Tuple5.of(ctx.getCurrentKey(), r, (int) (r % 7), r / 4.0, r % 2 == 0));
        }
    }
}
