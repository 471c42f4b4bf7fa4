package stateutil.flink.jobs;

import java.util.List;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

import stateutil.flink.KeyedSpec;
import stateutil.flink.StateDef;

/** A {@link SimpleKeyedJob} on String keys "&lt;prefix&gt;-&lt;r % keys&gt;", four records a key. */
abstract class StringKeyedJob extends SimpleKeyedJob<String> {
    private final String prefix;

    StringKeyedJob(String prefix) {
        this.prefix = prefix;
    }

    /** The keyed states, in the order apply takes them. */
    abstract List<StateDef> states();

    @Override
    long divisor() {
        return 4;
    }

    @Override
    TypeInformation<String> keyType() {
        return Types.STRING;
    }

    @Override
    KeyedSpec spec() {
        return new KeyedSpec(KEYED, Types.STRING, states(), false);
    }

    @Override
    String key(long r, long keys) {
        return prefix + "-" + (r % keys);
    }
}
