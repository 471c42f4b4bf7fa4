package stateutil.flink;

import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericFixed;
import org.apache.avro.generic.GenericRecord;
import org.apache.flink.api.common.typeinfo.BasicArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.tuple.Tuple;
import org.apache.flink.api.java.typeutils.EitherTypeInfo;
import org.apache.flink.api.java.typeutils.EnumTypeInfo;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.api.java.typeutils.ListTypeInfo;
import org.apache.flink.api.java.typeutils.MapTypeInfo;
import org.apache.flink.api.java.typeutils.ObjectArrayTypeInfo;
import org.apache.flink.api.java.typeutils.PojoField;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.api.java.typeutils.TupleTypeInfoBase;
import org.apache.flink.types.Either;
import org.apache.flink.types.Row;

/**
 * The dump format's value encoding (see testenv/flink/README.md): turns a state value into a
 * JSON tree (null, Boolean, Long, BigInteger, {@link Num}, String, List, sorted Map) guided by
 * the value's Flink TypeInformation, and renders it with object keys and nothing else sorted.
 */
public final class Json {
    private Json() {}

    /** A JSON number kept as the exact text Java's Double.toString gives. */
    public record Num(String text) {}

    /** Object keys in UTF-8 byte order (what Go's sort.Strings does). */
    public static final Comparator<String> BYTE_ORDER = (a, b) -> compareBytes(a, b);

    public static int compareBytes(String a, String b) {
        byte[] x = a.getBytes(StandardCharsets.UTF_8);
        byte[] y = b.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(x.length, y.length);
        for (int i = 0; i < n; i++) {
            int c = (x[i] & 0xff) - (y[i] & 0xff);
            if (c != 0) {
                return c;
            }
        }
        return x.length - y.length;
    }

    public static TreeMap<String, Object> obj() {
        return new TreeMap<>(BYTE_ORDER);
    }

    /** What an encoder of {@link #register} returns for values that are not its own. */
    public static final Object UNKNOWN = new Object();

    private static final List<java.util.function.BiFunction<Object, TypeInformation<?>, Object>> ENCODERS =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Adds an encoder of types this class does not know (those of one Flink major only). */
    public static void register(java.util.function.BiFunction<Object, TypeInformation<?>, Object> encoder) {
        ENCODERS.add(encoder);
    }

    /** Encodes v as the value of type t (t may be null: then by v's runtime class). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static Object enc(Object v, TypeInformation<?> t) {
        if (v == null) {
            return null;
        }
        for (java.util.function.BiFunction<Object, TypeInformation<?>, Object> e : ENCODERS) {
            Object out = e.apply(v, t);
            if (out != UNKNOWN) {
                return out;
            }
        }
        if (v instanceof GenericRecord) { // before POJOs: a SpecificRecord's AvroTypeInfo is a PojoTypeInfo
            return avro(v, ((GenericRecord) v).getSchema());
        }
        if (t instanceof PrimitiveArrayTypeInfo || t instanceof BasicArrayTypeInfo) {
            return array(v, t instanceof BasicArrayTypeInfo ? ((BasicArrayTypeInfo) t).getComponentInfo() : null);
        }
        if (t instanceof ObjectArrayTypeInfo) {
            return array(v, ((ObjectArrayTypeInfo) t).getComponentInfo());
        }
        if (t instanceof RowTypeInfo && v instanceof Row) {
            RowTypeInfo rt = (RowTypeInfo) t;
            Row r = (Row) v;
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < r.getArity(); i++) {
                out.add(enc(r.getField(i), i < rt.getArity() ? rt.getTypeAt(i) : null));
            }
            return out;
        }
        if (t instanceof TupleTypeInfoBase && v instanceof Tuple) {
            TupleTypeInfoBase tt = (TupleTypeInfoBase) t;
            Tuple tu = (Tuple) v;
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < tu.getArity(); i++) {
                out.add(enc(tu.getField(i), tt.getTypeAt(i)));
            }
            return out;
        }
        if (t instanceof PojoTypeInfo) {
            PojoTypeInfo<?> pt = (PojoTypeInfo<?>) t;
            TreeMap<String, Object> out = obj();
            for (int i = 0; i < pt.getArity(); i++) {
                PojoField pf = pt.getPojoFieldAt(i);
                Field f = pf.getField();
                try {
                    f.setAccessible(true);
                    out.put(f.getName(), enc(f.get(v), pf.getTypeInformation()));
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
            return out;
        }
        if (t instanceof EitherTypeInfo && v instanceof Either) {
            EitherTypeInfo et = (EitherTypeInfo) t;
            Either e = (Either) v;
            TreeMap<String, Object> out = obj();
            if (e.isLeft()) {
                out.put("left", enc(e.left(), et.getLeftType()));
            } else {
                out.put("right", enc(e.right(), et.getRightType()));
            }
            return out;
        }
        if (t instanceof EnumTypeInfo || v instanceof Enum) {
            return ((Enum<?>) v).name();
        }
        if (t instanceof ListTypeInfo) {
            TypeInformation<?> et = ((ListTypeInfo) t).getElementTypeInfo();
            List<Object> out = new ArrayList<>();
            for (Object e : (Iterable<?>) v) {
                out.add(enc(e, et));
            }
            return out;
        }
        if (t instanceof MapTypeInfo) {
            MapTypeInfo mt = (MapTypeInfo) t;
            return map((Map<?, ?>) v, mt.getKeyTypeInfo(), mt.getValueTypeInfo());
        }
        if (t instanceof GenericTypeInfo) {
            TreeMap<String, Object> out = obj();
            out.put("class", v.getClass().getName());
            out.put("toString", v.toString());
            return out;
        }
        Object table = TableValues.encode(v, t);
        if (table != TableValues.NOT_TABLE) {
            return table;
        }
        return scalar(v);
    }

    /** A JSON object of a map: string keys as they are, other keys as their JSON text. */
    public static TreeMap<String, Object> map(Map<?, ?> m, TypeInformation<?> kt, TypeInformation<?> vt) {
        TreeMap<String, Object> out = obj();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            out.put(mapKey(e.getKey(), kt), enc(e.getValue(), vt));
        }
        return out;
    }

    public static String mapKey(Object k, TypeInformation<?> kt) {
        Object ek = enc(k, kt);
        return ek instanceof String ? (String) ek : render(ek);
    }

    public static Object scalar(Object v) {
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        if (v instanceof BigInteger) {
            return v;
        }
        if (v instanceof Double || v instanceof Float) {
            return num(((Number) v).doubleValue());
        }
        if (v instanceof BigDecimal) {
            return new Num(((BigDecimal) v).toString());
        }
        if (v instanceof Boolean || v instanceof String) {
            return v;
        }
        if (v instanceof Character) {
            return String.valueOf((char) (Character) v);
        }
        if (v instanceof CharSequence) {
            return v.toString();
        }
        if (v.getClass().isArray()) {
            return array(v, null);
        }
        if (v instanceof Map) {
            return map((Map<?, ?>) v, null, null);
        }
        if (v instanceof Collection) {
            List<Object> out = new ArrayList<>();
            for (Object e : (Collection<?>) v) {
                out.add(enc(e, null));
            }
            return out;
        }
        TreeMap<String, Object> out = obj();
        out.put("class", v.getClass().getName());
        out.put("toString", v.toString());
        return out;
    }

    public static Num num(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            throw new IllegalArgumentException("not representable in JSON: " + d);
        }
        return new Num(Double.toString(d));
    }

    static Object array(Object v, TypeInformation<?> component) {
        if (v instanceof byte[]) {
            return hex((byte[]) v);
        }
        int n = Array.getLength(v);
        List<Object> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(enc(Array.get(v, i), component));
        }
        return out;
    }

    public static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(2 + 2 * b.length).append("0x");
        for (byte x : b) {
            sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return sb.toString();
    }

    /**
     * Renders an Avro datum as stateutil does: a union with one non-null branch as that
     * branch's value, other unions as {branch name: value}; fixed and bytes as hex; decimals
     * as numbers with the scale's digits; dates, times and timestamps as ISO text (UTC).
     */
    static Object avro(Object v, Schema s) {
        if (v == null) {
            return null;
        }
        LogicalType lt = s.getLogicalType();
        if (lt instanceof LogicalTypes.Decimal) {
            return new Num(decimal(v, ((LogicalTypes.Decimal) lt).getScale()).toPlainString());
        }
        if (lt != null) {
            switch (lt.getName()) {
                case "date":
                    return v instanceof LocalDate ? v.toString() : LocalDate.ofEpochDay(((Number) v).longValue()).toString();
                case "time-millis":
                    return LocalTime.ofNanoOfDay(nanos(v, 1_000_000L)).format(DateTimeFormatter.ofPattern("HH:mm:ss.SSS"));
                case "time-micros":
                    return LocalTime.ofNanoOfDay(nanos(v, 1_000L)).format(DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSS"));
                case "timestamp-millis":
                    return timestamp(v, 3);
                case "timestamp-micros":
                    return timestamp(v, 6);
                default:
                    break;
            }
        }
        switch (s.getType()) {
            case RECORD: {
                GenericRecord r = (GenericRecord) v;
                TreeMap<String, Object> out = obj();
                for (Schema.Field f : s.getFields()) {
                    out.put(f.name(), avro(r.get(f.name()), f.schema()));
                }
                return out;
            }
            case UNION: {
                Schema branch = s.getTypes().get(GenericData.get().resolveUnion(s, v));
                long nonNull = s.getTypes().stream().filter(t -> t.getType() != Schema.Type.NULL).count();
                if (nonNull <= 1) {
                    return avro(v, branch);
                }
                TreeMap<String, Object> out = obj();
                out.put(branch.getFullName(), avro(v, branch));
                return out;
            }
            case ARRAY: {
                List<Object> out = new ArrayList<>();
                for (Object e : (Collection<?>) v) {
                    out.add(avro(e, s.getElementType()));
                }
                return out;
            }
            case MAP: {
                TreeMap<String, Object> out = obj();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    out.put(e.getKey().toString(), avro(e.getValue(), s.getValueType()));
                }
                return out;
            }
            case BYTES:
            case FIXED:
                return hex(avroBytes(v));
            case ENUM:
                return v.toString();
            default:
                return scalar(v instanceof CharSequence ? v.toString() : v);
        }
    }

    private static byte[] avroBytes(Object v) {
        if (v instanceof GenericFixed) {
            return ((GenericFixed) v).bytes();
        }
        ByteBuffer bb = ((ByteBuffer) v).duplicate();
        byte[] b = new byte[bb.remaining()];
        bb.get(b);
        return b;
    }

    private static BigDecimal decimal(Object v, int scale) {
        return v instanceof BigDecimal ? (BigDecimal) v : new BigDecimal(new BigInteger(avroBytes(v)), scale);
    }

    private static long nanos(Object v, long unit) {
        return v instanceof LocalTime ? ((LocalTime) v).toNanoOfDay() : ((Number) v).longValue() * unit;
    }

    private static String timestamp(Object v, int digits) {
        Instant t = v instanceof Instant ? (Instant) v
                : digits == 3 ? Instant.ofEpochMilli(((Number) v).longValue())
                : Instant.EPOCH.plus(((Number) v).longValue(), ChronoUnit.MICROS);
        return DateTimeFormatter.ofPattern(digits == 3 ? "uuuu-MM-dd'T'HH:mm:ss.SSS'Z'" : "uuuu-MM-dd'T'HH:mm:ss.SSSSSS'Z'")
                .withZone(ZoneOffset.UTC).format(t);
    }

    /** Renders a JSON tree: keys in byte order, no spaces, only '"', '\\' and controls escaped. */
    public static String render(Object v) {
        StringBuilder sb = new StringBuilder();
        render(v, sb);
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    static void render(Object v, StringBuilder sb) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String) {
            string((String) v, sb);
        } else if (v instanceof Boolean || v instanceof Long || v instanceof BigInteger) {
            sb.append(v);
        } else if (v instanceof Num) {
            sb.append(((Num) v).text());
        } else if (v instanceof List) {
            sb.append('[');
            boolean first = true;
            for (Object e : (List<Object>) v) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                render(e, sb);
            }
            sb.append(']');
        } else if (v instanceof Map) {
            Map<String, Object> m = (Map<String, Object>) v;
            if (!(m instanceof TreeMap && ((TreeMap<String, Object>) m).comparator() == BYTE_ORDER)) {
                TreeMap<String, Object> t = obj();
                t.putAll(m);
                m = t;
            }
            sb.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : m.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                string(e.getKey(), sb);
                sb.append(':');
                render(e.getValue(), sb);
            }
            sb.append('}');
        } else {
            throw new IllegalArgumentException("not a JSON tree node: " + v.getClass());
        }
    }

    static void string(String s, StringBuilder sb) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
