package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;

import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * A list state of a user class that Kryo writes with its FieldSerializer (no length, fields
 * in the class's own layout) among states stateutil reads, on String keys
 * "user-&lt;r % keys&gt;": in a heap snapshot nothing delimits that list's elements, and the
 * sections of the other states come before or after it in a key group (in the order of a
 * HashMap over the states, which differs from run to run). A list of HashMaps, which Kryo
 * writes with its own serializer of JDK maps, is delimited by decoding it.
 */
public final class HeapKryoJob extends StringKeyedJob {
    /** Not a POJO (final fields, no no-arg constructor): Kryo's FieldSerializer. */
    public static final class Event {
        private final long seq;
        private final String what;

        public Event(long seq, String what) {
            this.seq = seq;
            this.what = what;
        }

        @Override
        public String toString() {
            return "Event{seq=" + seq + ", what=" + what + "}";
        }
    }

    public HeapKryoJob() {
        super("user");
    }

    @Override
    public String name() {
        return "heapkryo";
    }

    @Override
    List<StateDef> states() {
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.list("events", new GenericTypeInfo<>(Event.class)));
        s.add(StateDef.value("count", Types.LONG));
        s.add(StateDef.map("totals", Types.STRING, Types.LONG));
        s.add(StateDef.list("seen", Types.LONG));
        s.add(StateDef.value("last", Types.STRING));
        s.add(StateDef.list("maps", new GenericTypeInfo<>(HashMap.class)));
        return s;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        ((ListState) s.get(0)).add(new Event(r, "e" + (r % 7)));
        ValueState<Long> count = (ValueState<Long>) s.get(1);
        count.update(count.value() == null ? 1L : count.value() + 1);
        MapState<String, Long> totals = (MapState<String, Long>) s.get(2);
        String part = "p" + (r % 3);
        totals.put(part, (totals.contains(part) ? totals.get(part) : 0L) + r);
        ((ListState) s.get(3)).add(r);
        ((ValueState) s.get(4)).update("r-" + r);
        HashMap<String, Integer> m = new HashMap<>();
        m.put("a", (int) (r % 5));
        m.put("b", (int) (r % 11));
        ((ListState) s.get(5)).add(m);
    }
}
