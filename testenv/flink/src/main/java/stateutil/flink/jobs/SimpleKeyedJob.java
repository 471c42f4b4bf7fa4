package stateutil.flink.jobs;

import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

import stateutil.flink.DumpingKeyedOperator;
import stateutil.flink.Dumps;
import stateutil.flink.Job;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;

/**
 * A job of one keyed operator "keyed" after the main source: subclasses give the key of a
 * record number and what a record does to the states.
 */
abstract class SimpleKeyedJob<K> implements Job {
    static final String KEYED = "keyed";

    /** Records per key by default. */
    abstract long divisor();

    abstract TypeInformation<K> keyType();

    abstract KeyedSpec spec();

    /** The key of record r (must depend on r % keys only). */
    abstract K key(long r, long keys);

    /** Applies record r to the key's states (in spec order). */
    abstract void apply(long r, long keys, List<State> states, Params p) throws Exception;

    /** Adds one to a ValueState<Long> counter, which starts empty. */
    @SuppressWarnings("unchecked")
    static void increment(State counter) throws Exception {
        ValueState<Long> v = (ValueState<Long>) counter;
        Long c = v.value();
        v.update(c == null ? 1 : c + 1);
    }

    @Override
    public List<KeyedSpec> keyed(Params p) {
        return List.of(spec());
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(Jobs.sourceState("source"));
    }

    @Override
    public Map<String, Long> expected(Params p) {
        return Map.of(KEYED, p.records);
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        long keys = Jobs.keys(p, divisor());
        KeyedSpec spec = spec();
        Jobs.source(env, "source", p.records, Jobs.PARTITIONS)
                .keyBy(new Key<>(this, keys), keyType())
                .transform(KEYED, org.apache.flink.api.common.typeinfo.Types.LONG,
                        new DumpingKeyedOperator<K, Long, Long>(new Fn<>(this, spec, keys, p), spec))
                .uid(KEYED);
    }

    static final class Key<K> implements KeySelector<Long, K> {
        private final SimpleKeyedJob<K> job;
        private final long keys;

        Key(SimpleKeyedJob<K> job, long keys) {
            this.job = job;
            this.keys = keys;
        }

        @Override
        public K getKey(Long r) {
            return job.key(r, keys);
        }
    }

    static final class Fn<K> extends KeyedProcessFunction<K, Long, Long> {
        private final SimpleKeyedJob<K> job;
        private final KeyedSpec spec;
        private final long keys;
        private final Params p;
        private transient List<State> states;

        Fn(SimpleKeyedJob<K> job, KeyedSpec spec, long keys, Params p) {
            this.job = job;
            this.spec = spec;
            this.keys = keys;
            this.p = p;
        }

        @Override
        public void processElement(Long r, Context ctx, Collector<Long> out) throws Exception {
            if (states == null) {
                states = new java.util.ArrayList<>();
                for (stateutil.flink.StateDef d : spec.states) {
                    states.add(d.get(getRuntimeContext()));
                }
            }
            job.apply(r, keys, states, p);
            Dumps.counter(KEYED).incrementAndGet();
        }
    }
}
