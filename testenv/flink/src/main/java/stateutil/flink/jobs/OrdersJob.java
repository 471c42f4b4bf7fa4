package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.List;

import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.Types;

import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * The everyday Flink POJO, one with a collection field, on String keys "order-&lt;r % keys&gt;",
 * next to a plain String state. Flink 1.x serializes the {@code List<String>} field with Kryo
 * (a generic type), Flink 2.x with a NullableSerializer around a ListSerializer.
 */
public final class OrdersJob extends StringKeyedJob {
    /** A POJO (public fields, no-arg constructor) with a {@code List<String>} field. */
    public static final class Order {
        public int id;
        public String name;
        public List<String> tags;

        public Order() {}
    }

    public OrdersJob() {
        super("order");
    }

    @Override
    public String name() {
        return "orders";
    }

    @Override
    List<StateDef> states() {
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.value("order", Types.POJO(Order.class)));
        s.add(StateDef.value("note", Types.STRING));
        return s;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        Order o = new Order();
        o.id = (int) r;
        o.name = "order-" + r;
        o.tags = new ArrayList<>(List.of("t" + (r % 3), "u" + (r % 5)));
        ((ValueState) s.get(0)).update(o);
        ((ValueState) s.get(1)).update("note-" + r);
    }
}
