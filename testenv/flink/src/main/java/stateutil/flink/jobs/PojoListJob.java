package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.List;

import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

import stateutil.flink.KeyedSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * ValueState "tagged" of a POJO with a List field, on String keys "tag-&lt;r % keys&gt;":
 * Flink 1.x serializes the field with Kryo, Flink 2.x with its own List serializer, so
 * each major refuses the other's POJO serializer.
 */
public final class PojoListJob extends SimpleKeyedJob<String> {
    /** A Flink POJO whose field of a collection type changed serializer in Flink 2. */
    public static final class Tagged {
        public String name;
        public List<String> tags;

        public Tagged() {}
    }

    @Override
    public String name() {
        return "pojolist";
    }

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
        return new KeyedSpec(KEYED, Types.STRING, List.of(StateDef.value("tagged", Types.POJO(Tagged.class))), false);
    }

    @Override
    String key(long r, long keys) {
        return "tag-" + (r % keys);
    }

    @SuppressWarnings("unchecked")
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        Tagged t = new Tagged();
        t.name = "tagged-" + r;
        t.tags = new ArrayList<>(List.of("t" + (r % 3), "u" + (r % 5)));
        ((ValueState<Tagged>) s.get(0)).update(t);
    }
}
