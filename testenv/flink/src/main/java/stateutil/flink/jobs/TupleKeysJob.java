package stateutil.flink.jobs;

import java.util.List;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;

import stateutil.flink.KeyedSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/** Tuple2&lt;String,Integer&gt; keys ("g" + m % 7, m) with m = r % keys: ValueState "count", ListState "records". */
public final class TupleKeysJob extends SimpleKeyedJob<Tuple2<String, Integer>> {
    @Override
    public String name() {
        return "tuplekeys";
    }

    @Override
    long divisor() {
        return 5;
    }

    @Override
    TypeInformation<Tuple2<String, Integer>> keyType() {
        return Types.TUPLE(Types.STRING, Types.INT);
    }

    @Override
    KeyedSpec spec() {
        return new KeyedSpec(KEYED, keyType(),
                List.of(StateDef.value("count", Types.LONG), StateDef.list("records", Types.LONG)), false);
    }

    @Override
    Tuple2<String, Integer> key(long r, long keys) {
        long m = r % keys;
        return Tuple2.of("g" + (m % 7), (int) m);
    }

    @SuppressWarnings("unchecked")
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        increment(s.get(0));
        ((ListState<Long>) s.get(1)).add(r);
    }
}
