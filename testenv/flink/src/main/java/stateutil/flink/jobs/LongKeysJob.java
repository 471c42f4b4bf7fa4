package stateutil.flink.jobs;

import java.util.List;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

import stateutil.flink.KeyedSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * Long keys (negative ones too: (r % keys) - keys/2): ValueState "count" and MapState
 * "by-record" (record number -> "v" + r). The keys straddle zero, where signed and unsigned
 * byte order differ (Flink 2.1.0's State Processor API duplicates such keys through RocksDB).
 */
public final class LongKeysJob extends SimpleKeyedJob<Long> {
    @Override
    public String name() {
        return "longkeys";
    }

    @Override
    long divisor() {
        return 5;
    }

    @Override
    TypeInformation<Long> keyType() {
        return Types.LONG;
    }

    @Override
    KeyedSpec spec() {
        return new KeyedSpec(KEYED, Types.LONG,
                List.of(StateDef.value("count", Types.LONG), StateDef.map("by-record", Types.LONG, Types.STRING)), false);
    }

    @Override
    Long key(long r, long keys) {
        return (r % keys) - keys / 2;
    }

    @SuppressWarnings("unchecked")
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        increment(s.get(0));
        ((MapState<Long, String>) s.get(1)).put(r, "v" + r);
    }
}
