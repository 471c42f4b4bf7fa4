package stateutil.flink.jobs;

import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;

import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * State that stateutil upgrade must refuse, naming why, on String keys "deal-&lt;r % keys&gt;":
 * ValueState {@code deal} of a POJO with a BigDecimal field (Flink's own serializer in both
 * majors) and a LocalDateTime field, which Flink 1.x and 2.x give to Kryo (Kryo 2 writes it
 * with its FieldSerializer over the JDK class's private fields, Kryo 5 with a serializer of its
 * own), and ValueState {@code money} of a class registered with a Kryo serializer of the job's
 * own.
 */
public final class UpgradeBlockedJob extends StringKeyedJob {
    /** A POJO (public fields, no-arg constructor). */
    public static final class Deal {
        public int id;
        public BigDecimal price;
        public LocalDateTime at;

        public Deal() {}
    }

    /** Cents, written by {@link MoneySerializer}. */
    public static final class Money {
        public long cents;

        public Money() {}

        @Override
        public String toString() {
            return "Money(" + cents + ")";
        }
    }

    /**
     * Money's Kryo serializer: the cents as a fixed 8-byte long. Raw types, so that the same
     * source compiles against Kryo 2 (read's Class&lt;T&gt;) and Kryo 5 (Class&lt;? extends T&gt;).
     */
    @SuppressWarnings({"rawtypes", "unchecked"})
    public static final class MoneySerializer extends Serializer {
        @Override
        public void write(Kryo kryo, Output out, Object m) {
            out.writeLong(((Money) m).cents);
        }

        @Override
        public Object read(Kryo kryo, Input in, Class type) {
            Money m = new Money();
            m.cents = in.readLong();
            return m;
        }
    }

    public UpgradeBlockedJob() {
        super("deal");
    }

    @Override
    public String name() {
        return "upgradeblock";
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        Object config = env.getConfig();
        try {
            try {
                config.getClass().getMethod("registerTypeWithKryoSerializer", Class.class, Class.class).invoke(config, Money.class, MoneySerializer.class);
            } catch (NoSuchMethodException e) {
                Object sc = config.getClass().getMethod("getSerializerConfig").invoke(config);
                sc.getClass().getMethod("registerTypeWithKryoSerializer", Class.class, Class.class).invoke(sc, Money.class, MoneySerializer.class);
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot register Money's Kryo serializer", e);
        }
        super.build(env, p);
    }

    @Override
    List<StateDef> states() {
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.value("deal", Types.POJO(Deal.class)));
        s.add(StateDef.value("money", new GenericTypeInfo<>(Money.class)));
        return s;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        Deal d = new Deal();
        d.id = (int) r;
        d.price = BigDecimal.valueOf(r * 100 + 5, 2);
        d.at = LocalDateTime.of(2026, 1 + (int) (r % 12), 1 + (int) (r % 28), (int) (r % 24), (int) (r % 60), (int) (r % 60), (int) r * 1000);
        ((ValueState) s.get(0)).update(d);
        Money m = new Money();
        m.cents = r * 101;
        ((ValueState) s.get(1)).update(m);
    }
}
