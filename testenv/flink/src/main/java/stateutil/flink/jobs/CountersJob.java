package stateutil.flink.jobs;

import java.util.List;

import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

import stateutil.flink.KeyedSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * For benchmarks of small entries: one Long key per record by default (--keys to share keys)
 * and one ValueState "count", a Long (the records the key saw), as most keyed state is.
 */
public final class CountersJob extends SimpleKeyedJob<Long> {
    @Override
    public String name() {
        return "counters";
    }

    @Override
    long divisor() {
        return 1;
    }

    @Override
    TypeInformation<Long> keyType() {
        return Types.LONG;
    }

    @Override
    KeyedSpec spec() {
        return new KeyedSpec(KEYED, Types.LONG, List.of(StateDef.value("count", Types.LONG)), false);
    }

    @Override
    Long key(long r, long keys) {
        return r % keys;
    }

    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        increment(s.get(0));
    }
}
