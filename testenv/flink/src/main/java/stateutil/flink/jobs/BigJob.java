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
 * For benchmarks: one Long key per record by default (--keys to share keys), ValueState
 * "value" (the record number) and MapState "payload" ("m" + r % 4 -> --payload characters).
 * About 115 bytes of canonical savepoint per record at the default 64-byte payload.
 */
public final class BigJob extends SimpleKeyedJob<Long> {
    private static final String CHARS;

    static {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8192; i++) {
            sb.append((char) ('a' + (i * 7 + i / 26) % 26));
        }
        CHARS = sb.toString();
    }

    @Override
    public String name() {
        return "big";
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
        return new KeyedSpec(KEYED, Types.LONG,
                List.of(StateDef.value("value", Types.LONG), StateDef.map("payload", Types.STRING, Types.STRING)), false);
    }

    @Override
    Long key(long r, long keys) {
        return r % keys;
    }

    /** The payload of record r: n characters from a fixed text, starting at r % 4096. */
    public static String payload(long r, int n) {
        int from = (int) (r % 4096);
        return n <= CHARS.length() - from ? CHARS.substring(from, from + n) : CHARS.repeat(n / CHARS.length() + 1).substring(0, n);
    }

    @SuppressWarnings("unchecked")
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        ((ValueState<Long>) s.get(0)).update(r);
        ((MapState<String, String>) s.get(1)).put("m" + (r % 4), payload(r, p.payload));
    }
}
