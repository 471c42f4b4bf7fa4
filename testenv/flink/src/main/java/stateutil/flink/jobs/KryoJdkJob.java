package stateutil.flink.jobs;

import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Pattern;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;

import stateutil.flink.Json;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * The JDK classes Flink registers for Kryo from id 73 (Arrays.asList's list, BitSet,
 * PriorityQueue, Pattern, InetSocketAddress, and in Flink 2 Locale and the java.sql, URI and
 * UUID classes too), and a TreeSet, a PriorityQueue and a TreeMap each ordered by a JDK
 * comparator without fields or by Comparator.naturalOrder(), in a value and a list state of
 * Object, on String keys "jdk-&lt;r % keys&gt;"; and in a value state "kept", a user's enum
 * (one constant with a body) as the last thing of an ArrayList or HashMap, which stateutil
 * keeps as the bytes Kryo wrote after its class.
 * Flink 1.x writes them with chill-java's serializers under Kryo 2, Flink 2.x with Kryo 5's
 * own. Locale is left out of Flink 1.x: chill writes it with Java serialization.
 */
public final class KryoJdkJob extends StringKeyedJob {
    static {
        Json.register(KryoJdkJob::json);
    }

    /** Object under Kryo, marked so that the dump shows its values as stateutil does. */
    static final class AnyJdk extends GenericTypeInfo<Object> {
        private static final long serialVersionUID = 1L;

        AnyJdk() {
            super(Object.class);
        }
    }

    /** Object under Kryo holding a user's enum last. */
    static final class AnyKept extends GenericTypeInfo<Object> {
        private static final long serialVersionUID = 1L;

        AnyKept() {
            super(Object.class);
        }
    }

    /** A user's enum; BLUE has a body, a class of its own. */
    enum Color {
        RED,
        GREEN,
        BLUE {
            @Override
            public String toString() {
                return "blue";
            }
        }
    }

    /** Flink 2.x: Kryo 5 and Flink's registrations with Kryo's own serializers. */
    static final boolean KRYO5 = classExists("org.apache.flink.streaming.util.serialize.FlinkChillPackageRegistrar");

    private static boolean classExists(String name) {
        try {
            Class.forName(name);
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    public KryoJdkJob() {
        super("jdk");
    }

    @Override
    public String name() {
        return "kryojdk";
    }

    @Override
    List<StateDef> states() {
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.value("jdk", new AnyJdk()));
        s.add(StateDef.list("jdks", new AnyJdk()));
        s.add(StateDef.value("kept", new AnyKept()));
        return s;
    }

    static Object[] kinds(long r) {
        List<Object> k = new ArrayList<>(Arrays.asList(
                Arrays.asList("a" + r, "b" + r),
                Arrays.asList(new Object[] {r, "x" + r, null}),
                BitSet.valueOf(new long[] {r, 1L << 40 | r}),
                BitSet.valueOf(new long[0]),
                new PriorityQueue<>(List.of(r + 3, r, r + 1)),
                Pattern.compile("a" + r + "+b"),
                Pattern.compile("x" + r, Pattern.CASE_INSENSITIVE),
                InetSocketAddress.createUnresolved("h" + r + ".example", (int) (8000 + r)),
                sorted(new TreeSet<>(Collections.reverseOrder()), "s" + r, "t" + r, "u" + r),
                sorted(new PriorityQueue<>(Collections.reverseOrder()), r, r + 2, r + 1),
                sorted(new PriorityQueue<Long>(Comparator.naturalOrder()), r + 1, r),
                caseInsensitive(r)));
        if (KRYO5) {
            k.addAll(Arrays.asList(new Locale("de", "CH", r % 2 == 0 ? "" : "v" + r), new Locale("en"),
                    new UUID(r, -r), URI.create("http://h/" + r), timestamp(r),
                    new java.sql.Date(r * 86_400_000L), new java.sql.Time(r * 1000)));
        }
        return k.toArray();
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        Object[] kinds = kinds(r);
        ((ValueState) s.get(0)).update(kinds[(int) (r % kinds.length)]);
        ((ListState) s.get(1)).add(kinds[(int) ((r / 3) % kinds.length)]);
        ((ValueState) s.get(2)).update(kept(r));
    }

    /** An ArrayList or HashMap with a Color last. */
    static Object kept(long r) {
        Color c = Color.values()[(int) (r % 3)];
        switch ((int) (r / 3 % 3)) {
            case 0:
                return new ArrayList<>(Arrays.asList("e" + r, c));
            case 1:
                return new ArrayList<>(List.of(c));
            default:
                HashMap<String, Object> m = new HashMap<>();
                m.put("c" + r, c);
                return m;
        }
    }

    /**
     * A Color as stateutil shows it: its class (BLUE's own, Color$1: Kryo writes the name of the
     * object's class, and serializes it with its enum's serializer) and the bytes Kryo writes
     * after it, in Kryo 2 a
     * reference marker (1, a new object) then the ordinal plus one (EnumSerializer), in Kryo 5
     * the ordinal plus one alone (Kryo 5 keeps no references to enums).
     */
    static Object keptJson(Object v) {
        if (v instanceof Color) {
            TreeMap<String, Object> out = Json.obj();
            out.put("@class", v.getClass().getName());
            out.put("@bytes", String.format(KRYO5 ? "0x%02x" : "0x01%02x", ((Color) v).ordinal() + 1));
            return out;
        }
        if (v instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object e : (List<?>) v) {
                out.add(keptJson(e));
            }
            return out;
        }
        if (v instanceof java.util.Map) {
            TreeMap<String, Object> out = Json.obj();
            for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) {
                out.put((String) e.getKey(), keptJson(e.getValue()));
            }
            return out;
        }
        return v;
    }

    /** c with xs added. */
    @SafeVarargs
    static <T> Collection<T> sorted(Collection<T> c, T... xs) {
        c.addAll(Arrays.asList(xs));
        return c;
    }

    /** A TreeMap ordered by a comparator without fields (Kryo writes none of it but its class). */
    static TreeMap<String, Object> caseInsensitive(long r) {
        TreeMap<String, Object> m = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        m.put("B" + r, r);
        m.put("a" + r, "x" + r);
        return m;
    }

    /** A Timestamp with nanoseconds below its milliseconds. */
    static java.sql.Timestamp timestamp(long r) {
        java.sql.Timestamp t = new java.sql.Timestamp(r * 1000);
        t.setNanos((int) (r % 1000) * 1_000_000 + (int) r * 7);
        return t;
    }

    static Object json(Object v, TypeInformation<?> t) {
        if (t instanceof AnyKept) {
            return keptJson(v);
        }
        return t instanceof AnyJdk ? kryoJson(v) : Json.UNKNOWN;
    }

    /**
     * A value under Kryo as stateutil shows it: Strings and Longs plain, anything else with its
     * class. A list of Arrays.asList names its array's component class in Flink 1.x (chill
     * writes it): String for a list of Strings here, Object otherwise; a BitSet is its set bits;
     * a Pattern its text, and in Flink 2.x its flags when there are any (chill drops them); an
     * InetSocketAddress [host, port]; a Locale [language, country, variant]; a sorted collection
     * or map names the class of its comparator, if it has one.
     */
    static Object kryoJson(Object v) {
        if (v == null || v instanceof String || v instanceof Long) {
            return v;
        }
        TreeMap<String, Object> out = Json.obj();
        out.put("@class", v.getClass().getName());
        if (v instanceof TreeSet || v instanceof PriorityQueue || v instanceof TreeMap) {
            Object c = v instanceof TreeSet ? ((TreeSet<?>) v).comparator()
                    : v instanceof PriorityQueue ? ((PriorityQueue<?>) v).comparator() : ((TreeMap<?, ?>) v).comparator();
            if (c != null) {
                out.put("@comparator", c.getClass().getName());
            }
        }
        if (v instanceof TreeMap) {
            TreeMap<String, Object> m = Json.obj();
            for (java.util.Map.Entry<?, ?> e : ((TreeMap<?, ?>) v).entrySet()) {
                m.put((String) e.getKey(), kryoJson(e.getValue()));
            }
            out.put("@value", m);
        } else if (v instanceof Collection) {
            List<Object> elems = new ArrayList<>();
            boolean strings = true;
            for (Object e : (Collection<?>) v) {
                elems.add(kryoJson(e));
                strings &= e instanceof String;
            }
            out.put("@value", elems);
            if (!KRYO5 && v.getClass().getName().equals("java.util.Arrays$ArrayList")) {
                out.put("@component", strings ? "java.lang.String" : "java.lang.Object");
            }
        } else if (v instanceof BitSet) {
            List<Object> bits = new ArrayList<>();
            ((BitSet) v).stream().forEach(i -> bits.add((long) i));
            out.put("@value", bits);
        } else if (v instanceof Pattern) {
            out.put("@value", ((Pattern) v).pattern());
            if (KRYO5 && ((Pattern) v).flags() != 0) {
                out.put("@flags", (long) ((Pattern) v).flags());
            }
        } else if (v instanceof InetSocketAddress) {
            out.put("@value", List.of(((InetSocketAddress) v).getHostString(), (long) ((InetSocketAddress) v).getPort()));
        } else if (v instanceof Locale) {
            Locale l = (Locale) v;
            out.put("@value", List.of(l.getLanguage(), l.getCountry(), l.getVariant()));
        } else if (v instanceof java.sql.Timestamp) {
            out.put("@value", List.of(((java.sql.Timestamp) v).getTime(), (long) ((java.sql.Timestamp) v).getNanos()));
        } else if (v instanceof java.util.Date) {
            out.put("@value", ((java.util.Date) v).getTime());
        } else if (v instanceof UUID || v instanceof URI) {
            out.put("@value", v.toString());
        } else {
            out.put("@value", Json.scalar(v));
        }
        return out;
    }
}
