package stateutil.flink.jobs;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import stateutil.flink.Compat;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * The state a Flink 1.x job keeps that Flink 2.x serializes otherwise, for stateutil upgrade's
 * restore matrix, on String keys "cart-&lt;r % keys&gt;": a POJO with List, Collection, Set
 * and Map fields (Flink 1.x: Kryo; 2.x: NullableSerializer around its collection serializers)
 * and nested collections (Kryo in both), in a value state with TTL, a list state with TTL and a
 * map state; and values of JDK classes under Kryo (Kryo 2.24 in 1.x, Kryo 5.6 in 2.x) in a
 * value state with TTL, a list state and a map state. {@code upgradereg} is the same
 * job with some of those classes registered with Kryo (their values then carry registration
 * ids, not class names).
 */
public final class UpgradeJob extends StringKeyedJob {
    /** A POJO (public fields, no-arg constructor) with collection fields. */
    public static final class Cart {
        public int id;
        public List<Long> amounts;
        public Collection<String> notes;
        public Set<Long> skus;
        public Map<String, Integer> counts;
        public List<List<Long>> batches;
        public Map<String, List<String>> groups;

        public Cart() {}
    }

    /** Object under Kryo. */
    static final class AnyValue extends GenericTypeInfo<Object> {
        private static final long serialVersionUID = 1L;

        AnyValue() {
            super(Object.class);
        }
    }

    /** The classes upgradereg registers with Kryo, in order. */
    static final Class<?>[] REGISTERED = {LinkedList.class, BigDecimal.class, HashSet.class};

    private final boolean registered;

    public UpgradeJob(boolean registered) {
        super("cart");
        this.registered = registered;
    }

    @Override
    public String name() {
        return registered ? "upgradereg" : "upgrade";
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        if (registered) {
            for (Class<?> c : REGISTERED) {
                registerKryoType(env, c);
            }
        }
        super.build(env, p);
    }

    /** ExecutionConfig.registerKryoType in Flink 1.x, SerializerConfigImpl's in Flink 2.x. */
    static void registerKryoType(StreamExecutionEnvironment env, Class<?> c) {
        Object config = env.getConfig();
        try {
            try {
                config.getClass().getMethod("registerKryoType", Class.class).invoke(config, c);
                return;
            } catch (NoSuchMethodException e) {
                Object sc = config.getClass().getMethod("getSerializerConfig").invoke(config);
                sc.getClass().getMethod("registerKryoType", Class.class).invoke(sc, c);
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot register " + c + " with Kryo", e);
        }
    }

    @Override
    List<StateDef> states() {
        StateTtlConfig ttl = Compat.ttl(Jobs.ttl(Duration.ofDays(1)))
                .setUpdateType(StateTtlConfig.UpdateType.OnCreateAndWrite)
                .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                .build();
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.value("cart", Types.POJO(Cart.class)).withTtl(ttl));
        s.add(StateDef.list("carts", Types.POJO(Cart.class)).withTtl(ttl));
        s.add(StateDef.map("carts-by-day", Types.STRING, Types.POJO(Cart.class)));
        s.add(StateDef.value("generic", new AnyValue()).withTtl(ttl));
        s.add(StateDef.list("generics", new AnyValue()));
        s.add(StateDef.map("generic-by-name", Types.STRING, new AnyValue()));
        return s;
    }

    static Cart cart(long r) {
        Cart c = new Cart();
        c.id = (int) r;
        c.amounts = new ArrayList<>(Arrays.asList(r, r % 5 == 0 ? null : r * 3));
        c.notes = r % 3 == 0 ? null : new ArrayList<>(List.of("n" + r, "ü" + (r % 4)));
        c.skus = new HashSet<>(List.of(r * 7, r * 7 + 1));
        c.counts = new HashMap<>();
        c.counts.put("a", (int) (r % 7));
        if (r % 4 == 0) {
            c.counts.put("z", null);
        }
        c.batches = new ArrayList<>(List.of(new ArrayList<>(List.of(r, r + 1)), new ArrayList<>(List.of(r + 2))));
        c.groups = new HashMap<>();
        c.groups.put("g" + (r % 2), new ArrayList<>(List.of("x" + r)));
        return c;
    }

    static Object generic(long r) {
        switch ((int) (r % 6)) {
            case 0:
                return new ArrayList<>(List.of("a" + r, "b" + r));
            case 1: {
                HashMap<String, Long> m = new HashMap<>();
                m.put("k" + r, r);
                m.put("n", null);
                return m;
            }
            case 2:
                return new BigDecimal(BigInteger.valueOf(r * 1000 + 7), 2);
            case 3:
                return new LinkedList<>(List.of(r, -r));
            case 4:
                return new HashSet<>(List.of("s" + r));
            default:
                return new java.util.Date(r * 86_400_000L);
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        ((ValueState) s.get(0)).update(cart(r));
        ((ListState) s.get(1)).add(cart(r + 1000));
        ((MapState) s.get(2)).put("d" + (r % 3), cart(r + 2000));
        ((ValueState) s.get(3)).update(generic(r));
        ((ListState) s.get(4)).add(generic(r / 2));
        ((MapState) s.get(5)).put("m" + (r % 2), generic(r + 1));
    }
}
