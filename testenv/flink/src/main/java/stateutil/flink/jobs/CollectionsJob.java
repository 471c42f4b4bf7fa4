package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.Types;

import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * A POJO with a field of each collection type, on String keys "basket-&lt;r % keys&gt;": Flink
 * 2.x serializes {@code List<T>}, {@code Map<K,V>} and {@code Set<T>} fields with a
 * NullableSerializer around a ListSerializer, MapSerializer or SetSerializer; Flink 1.x with
 * Kryo. Some fields, elements and map values are null.
 */
public final class CollectionsJob extends StringKeyedJob {
    /** A POJO (public fields, no-arg constructor) with collection fields. */
    public static final class Basket {
        public int id;
        public List<Long> amounts;
        public Map<String, Integer> counts;
        public Set<String> labels;

        public Basket() {}
    }

    public CollectionsJob() {
        super("basket");
    }

    @Override
    public String name() {
        return "collections";
    }

    @Override
    List<StateDef> states() {
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.value("basket", Types.POJO(Basket.class)));
        return s;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        Basket b = new Basket();
        b.id = (int) r;
        b.amounts = new ArrayList<>(Arrays.asList(r, r % 5 == 0 ? null : r * 3));
        b.counts = new HashMap<>();
        b.counts.put("a", (int) (r % 7));
        b.counts.put("b", (int) (r % 11));
        if (r % 4 == 0) {
            b.counts.put("n", null);
        }
        if (r % 3 != 0) {
            b.labels = new HashSet<>(List.of("l" + (r % 2), "m" + (r % 3)));
        }
        ((ValueState) s.get(0)).update(b);
    }
}
