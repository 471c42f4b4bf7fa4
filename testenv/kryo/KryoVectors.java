import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Output;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.*;
import java.util.concurrent.TimeUnit;

/** Prints "name hex" for values written the way Flink's KryoSerializer writes them (references on). */
public class KryoVectors {
    public static void main(String[] args) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("arraylist", new ArrayList<>(Arrays.asList("a", "bc")));
        v.put("null", null);
        v.put("int", -3);
        v.put("long", 1234567890123L);
        v.put("short", (short) -2);
        v.put("byte", (byte) 7);
        v.put("char", 'x');
        v.put("bool", true);
        v.put("float", 1.5f);
        v.put("double", -2.25d);
        v.put("string", "hello");
        v.put("string1", "a");
        v.put("stringempty", "");
        v.put("stringutf", "h\u00e9llo\u20ac");
        String s = "same";
        v.put("refs", new ArrayList<>(Arrays.asList(s, s, null, 5)));
        Map<String, Integer> hm = new HashMap<>();
        hm.put("k", 1);
        v.put("hashmap", hm);
        Map<String, Object> lhm = new LinkedHashMap<>();
        lhm.put("b", 2L);
        lhm.put("a", "x");
        v.put("linkedhashmap", lhm);
        TreeMap<String, Integer> tm = new TreeMap<>();
        tm.put("z", 26);
        tm.put("y", 25);
        v.put("treemap", tm);
        v.put("treeset", new TreeSet<>(Arrays.asList(3, 1, 2)));
        v.put("hashset", new HashSet<>(Arrays.asList("q")));
        v.put("linkedlist", new LinkedList<>(Arrays.asList(1L, 2L)));
        v.put("biginteger", new BigInteger("-123456789012345678901234567890"));
        v.put("bigdecimal", new BigDecimal("-12345.678"));
        v.put("date", new Date(1700000000123L));
        v.put("class", String.class);
        v.put("enum", TimeUnit.SECONDS);
        v.put("intarray", new int[] {1, -1, 300});
        v.put("stringarray", new String[] {"a", null, "bc"});
        v.put("objectarray", new Object[] {1, "x"});
        v.put("longarray", new long[] {5, -5});
        v.put("doublearray", new double[] {0.5});
        v.put("bytearray", new byte[] {1, 2, (byte) 255});
        v.put("emptylist", Collections.emptyList());
        v.put("emptymap", Collections.emptyMap());
        v.put("emptyset", Collections.emptySet());
        v.put("singletonlist", Collections.singletonList("s"));
        v.put("unmodifiablelist", Collections.unmodifiableList(new ArrayList<>(Arrays.asList("u"))));
        v.put("nested", new ArrayList<>(Arrays.asList(new ArrayList<>(Arrays.asList(1)), hm)));
        v.put("ascii32", "abcdefghijklmnopqrstuvwxyzABCDEF");
        v.put("ascii33", "abcdefghijklmnopqrstuvwxyzABCDEFG");
        v.put("ascii63", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789a");
        v.put("ascii64", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab");
        v.put("stringnul", "a\u0000b\ud83d\ude00");
        v.put("emptyarraylist", new ArrayList<>());
        v.put("emptytreeset", new TreeSet<>());
        v.put("emptytreemap", new TreeMap<>());
        v.put("withnull", new ArrayList<>(Arrays.asList(null, "a", "a")));
        v.put("allnull", new ArrayList<>(Arrays.asList((Object) null)));
        v.put("intswithnull", new ArrayList<>(Arrays.asList(1, null)));
        List<Integer> big = new ArrayList<>();
        for (int i = 0; i < 70; i++) big.add(i);
        v.put("biglist", big);
        String t = "t";
        v.put("samerefs", new ArrayList<>(Arrays.asList(t, t)));
        v.put("bigintnull", new ArrayList<>(Arrays.asList(java.math.BigInteger.ONE, java.math.BigInteger.ZERO)));
        v.put("intclass", int.class);
        v.put("integerclass", Integer.class);
        v.put("maxlong", Long.MIN_VALUE);
        v.put("maxint", Integer.MIN_VALUE);
        v.put("linkedhashset", new LinkedHashSet<>(Arrays.asList("p")));
        v.put("singletonmap", Collections.singletonMap("k", "v"));
        v.put("singletonset", Collections.singleton(1));
        v.put("longkeys", new HashMap<>(Collections.singletonMap(5L, "five")));
        v.put("booleanarray", new boolean[] {true, false});
        v.put("chararray", new char[] {'a'});
        v.put("floatarray", new float[] {1.5f});
        v.put("shortarray", new short[] {-1});
        for (Map.Entry<String, Object> e : v.entrySet()) {
            Kryo kryo = new Kryo();
            kryo.setReferences(true);
            kryo.setRegistrationRequired(false);
            Output out = new Output(64, -1);
            try {
                kryo.writeClassAndObject(out, e.getValue());
                StringBuilder sb = new StringBuilder();
                for (byte b : out.toBytes()) {
                    sb.append(String.format("%02x", b));
                }
                System.out.println(e.getKey() + " " + sb);
            } catch (RuntimeException ex) {
                System.out.println(e.getKey() + " ERROR " + ex);
            }
        }
    }
}
