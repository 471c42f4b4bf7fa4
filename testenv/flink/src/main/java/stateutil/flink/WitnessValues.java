package stateutil.flink;

import java.io.ByteArrayOutputStream;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.GenericArraySerializer;
import org.apache.flink.api.java.typeutils.runtime.EitherSerializer;
import org.apache.flink.api.java.typeutils.runtime.NullableSerializer;
import org.apache.flink.api.java.typeutils.runtime.PojoSerializer;
import org.apache.flink.api.java.typeutils.runtime.RowSerializer;
import org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer;
import org.apache.flink.cep.nfa.ComputationState;
import org.apache.flink.cep.nfa.DeweyNumber;
import org.apache.flink.cep.nfa.NFAState;
import org.apache.flink.cep.nfa.sharedbuffer.EventId;
import org.apache.flink.cep.nfa.sharedbuffer.Lockable;
import org.apache.flink.cep.nfa.sharedbuffer.NodeId;
import org.apache.flink.cep.nfa.sharedbuffer.SharedBufferEdge;
import org.apache.flink.cep.nfa.sharedbuffer.SharedBufferNode;
import org.apache.flink.types.Either;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Registration;
import com.esotericsoftware.kryo.io.Output;
import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;

/**
 * The witness jobs' value encoding (testenv/flink/README.md, "Witness values"): what a value
 * holds, guided by the serializer Flink restored from the snapshot, for the serializers the
 * planner's and the older jobs' dumps never needed: POJOs and Java records, Row with its
 * RowKind, Either, enums, arrays, BigDecimal, BigInteger, java.time, Kryo values (JDK classes,
 * Optional, user classes by field, classes with a registered Kryo serializer as the bytes it
 * writes, Protobuf messages by field) and CEP's NFA state and shared buffer.
 */
final class WitnessValues {
    static final Object NOT_MINE = new Object();

    private static final DateTimeFormatter INSTANT = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS'Z'").withZone(ZoneOffset.UTC);
    private static final DateTimeFormatter LOCAL_DATE_TIME = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS");
    private static final DateTimeFormatter LOCAL_TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSSSSS");

    private WitnessValues() {}

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Object enc(Object v, TypeSerializer<?> s) {
        if (s instanceof NullableSerializer) {
            return SerializerJson.enc(v, (TypeSerializer<?>) SerializerJson.field(s, "originalSerializer"));
        }
        if (s instanceof PojoSerializer) {
            return pojo(v, (PojoSerializer<?>) s);
        }
        if (s instanceof RowSerializer && v instanceof Row) {
            Row r = (Row) v;
            TypeSerializer<Object>[] fs = (TypeSerializer<Object>[]) SerializerJson.field(s, "fieldSerializers");
            List<Object> out = new ArrayList<>(r.getArity());
            for (int i = 0; i < r.getArity(); i++) {
                out.add(SerializerJson.enc(r.getField(i), fs[i]));
            }
            return withKind(r.getKind(), out);
        }
        if (s instanceof EitherSerializer && v instanceof Either) {
            EitherSerializer<?, ?> es = (EitherSerializer<?, ?>) s;
            Either<?, ?> e = (Either<?, ?>) v;
            TreeMap<String, Object> out = Json.obj();
            if (e.isLeft()) {
                out.put("left", SerializerJson.enc(e.left(), es.getLeftSerializer()));
            } else {
                out.put("right", SerializerJson.enc(e.right(), es.getRightSerializer()));
            }
            return out;
        }
        if (s instanceof GenericArraySerializer) {
            TypeSerializer<?> cs = ((GenericArraySerializer<?>) s).getComponentSerializer();
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < Array.getLength(v); i++) {
                out.add(SerializerJson.enc(Array.get(v, i), cs));
            }
            return out;
        }
        if (s instanceof KryoSerializer) {
            KryoSerializer<?> ks = (KryoSerializer<?>) s;
            return kryo(v, ks.getKryo(), (Class<?>) SerializerJson.field(ks, "type"));
        }
        if (v instanceof Lockable) {
            TypeSerializer<?> es = (TypeSerializer<?>) SerializerJson.field(s, "elementSerializer");
            TreeMap<String, Object> out = Json.obj();
            out.put("refCounter", (long) (int) (Integer) SerializerJson.field(v, "refCounter"));
            out.put("element", SerializerJson.enc(((Lockable<?>) v).getElement(), es));
            return out;
        }
        Object plain = plain(v);
        return plain;
    }

    /** Values whose encoding needs no serializer (CEP's, java.time, big numbers, enums); else NOT_MINE. */
    static Object plain(Object v) {
        if (v instanceof NFAState) {
            NFAState n = (NFAState) v;
            TreeMap<String, Object> out = Json.obj();
            out.put("partialMatches", computations(n.getPartialMatches()));
            out.put("completedMatches", computations(n.getCompletedMatches()));
            return out;
        }
        if (v instanceof SharedBufferNode) {
            List<Object> edges = new ArrayList<>();
            for (Lockable<SharedBufferEdge> e : ((SharedBufferNode) v).getEdges()) {
                TreeMap<String, Object> le = Json.obj();
                le.put("refCounter", (long) (int) (Integer) SerializerJson.field(e, "refCounter"));
                le.put("element", plain(e.getElement()));
                edges.add(le);
            }
            TreeMap<String, Object> out = Json.obj();
            out.put("edges", edges);
            return out;
        }
        if (v instanceof SharedBufferEdge) {
            TreeMap<String, Object> out = Json.obj();
            Object target = SerializerJson.field(v, "target");
            out.put("target", target == null ? null : plain(target));
            out.put("deweyNumber", SerializerJson.field(v, "deweyNumber").toString());
            return out;
        }
        if (v instanceof NodeId) {
            TreeMap<String, Object> out = Json.obj();
            out.put("eventId", plain(((NodeId) v).getEventId()));
            out.put("pageName", ((NodeId) v).getPageName());
            return out;
        }
        if (v instanceof EventId) {
            TreeMap<String, Object> out = Json.obj();
            out.put("id", (long) ((EventId) v).getId());
            out.put("timestamp", ((EventId) v).getTimestamp());
            return out;
        }
        if (v instanceof DeweyNumber) {
            return v.toString();
        }
        if (v instanceof Instant) {
            return INSTANT.format((Instant) v);
        }
        if (v instanceof LocalDateTime) {
            return LOCAL_DATE_TIME.format((LocalDateTime) v);
        }
        if (v instanceof LocalDate) {
            return v.toString();
        }
        if (v instanceof LocalTime) {
            return LOCAL_TIME.format((LocalTime) v);
        }
        if (v instanceof java.sql.Timestamp) {
            return List.of(((java.sql.Timestamp) v).getTime(), (long) ((java.sql.Timestamp) v).getNanos());
        }
        if (v instanceof java.util.Date) {
            return ((java.util.Date) v).getTime();
        }
        if (v instanceof BigDecimal) {
            return new Json.Num(((BigDecimal) v).toPlainString());
        }
        if (v instanceof BigInteger) {
            return v;
        }
        if (v instanceof Enum) {
            return ((Enum<?>) v).name();
        }
        if (v instanceof Message) {
            return proto((Message) v);
        }
        return NOT_MINE;
    }

    private static List<Object> computations(Collection<ComputationState> cs) {
        List<Object> out = new ArrayList<>();
        for (ComputationState c : cs) {
            TreeMap<String, Object> m = Json.obj();
            m.put("currentStateName", c.getCurrentStateName());
            m.put("version", c.getVersion().toString());
            m.put("startTimestamp", c.getStartTimestamp());
            try {
                // Recorded from Flink 1.16 on.
                m.put("previousTimestamp", c.getClass().getMethod("getPreviousTimestamp").invoke(c));
            } catch (NoSuchMethodException e) {
                // Flink 1.15's NFA state has none.
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
            m.put("previousBufferEntry", c.getPreviousBufferEntry() == null ? null : plain(c.getPreviousBufferEntry()));
            m.put("startEventID", c.getStartEventID() == null ? null : plain(c.getStartEventID()));
            out.add(m);
        }
        return out;
    }

    static Object withKind(RowKind kind, Object rendered) {
        if (kind == RowKind.INSERT) {
            return rendered;
        }
        TreeMap<String, Object> out = Json.obj();
        out.put("@rowkind", kind.name());
        out.put("@row", rendered);
        return out;
    }

    /** A POJO or Java record: an object by field name, each field by its own serializer. */
    @SuppressWarnings("unchecked")
    private static Object pojo(Object v, PojoSerializer<?> s) {
        Field[] fields = (Field[]) SerializerJson.field(s, "fields");
        TypeSerializer<Object>[] fs = (TypeSerializer<Object>[]) SerializerJson.field(s, "fieldSerializers");
        TreeMap<String, Object> out = Json.obj();
        for (int i = 0; i < fields.length; i++) {
            if (fields[i] == null) {
                continue; // a field the class no longer has
            }
            try {
                fields[i].setAccessible(true);
                out.put(fields[i].getName(), SerializerJson.enc(fields[i].get(v), fs[i]));
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        return out;
    }

    /**
     * A value Kryo writes. Plain JSON where the bytes need nothing more (null, String, Long,
     * Boolean, ArrayList, HashMap with String keys, or a value of the class the serializer
     * declares); any other class as {"@class": C, "@value": V}. A class with a Kryo
     * serializer of the user's own shows the bytes that serializer writes:
     * {"@class": C, "@bytes": "0x.."}.
     */
    static Object kryo(Object v, Kryo kryo, Class<?> declared) {
        if (v == null) {
            return null;
        }
        Class<?> c = v.getClass();
        Registration reg = kryo.getClassResolver().getRegistration(c);
        if (reg != null && isUserSerializer(reg.getSerializer().getClass())) {
            TreeMap<String, Object> out = Json.obj();
            out.put("@class", c.getName());
            out.put("@bytes", Json.hex(kryoBytes(kryo, v)));
            return out;
        }
        Object content = kryoContent(v, kryo);
        boolean plain = v instanceof String || v instanceof Long || v instanceof Boolean || c == ArrayList.class
                || (c == java.util.HashMap.class && ((Map<?, ?>) v).keySet().stream().allMatch(k -> k instanceof String))
                || c == declared || (declared != null && declared.isPrimitive());
        if (plain) {
            return content;
        }
        TreeMap<String, Object> out = Json.obj();
        out.put("@class", c.getName());
        out.put("@value", content);
        return out;
    }

    private static boolean isUserSerializer(Class<?> sc) {
        String n = sc.getName();
        return !(n.startsWith("com.esotericsoftware.") || n.startsWith("org.apache.flink.") || n.startsWith("com.twitter.")
                || n.startsWith("de.javakaffee.") || n.startsWith("org.objenesis.") || n.startsWith("scala."));
    }

    /** The bytes Kryo writes for v after its class (a reference marker where Kryo keeps references, then the serializer's). */
    private static byte[] kryoBytes(Kryo kryo, Object v) {
        byte[] all = written(o -> kryo.writeClassAndObject(o, v));
        byte[] cls = written(o -> kryo.writeClass(o, v.getClass()));
        return java.util.Arrays.copyOfRange(all, cls.length, all.length);
    }

    private static byte[] written(java.util.function.Consumer<Output> write) {
        ByteArrayOutputStream bo = new ByteArrayOutputStream();
        Output o = new Output(bo);
        write.accept(o);
        o.flush();
        return bo.toByteArray();
    }

    private static Object kryoContent(Object v, Kryo kryo) {
        if (v instanceof String || v instanceof Boolean) {
            return v;
        }
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        if (v instanceof Double || v instanceof Float) {
            return Json.num(((Number) v).doubleValue());
        }
        if (v instanceof Character) {
            return String.valueOf((char) (Character) v);
        }
        if (v instanceof Optional) {
            Optional<?> o = (Optional<?>) v;
            return o.isPresent() ? kryo(o.get(), kryo, null) : null;
        }
        Object plain = plain(v);
        if (plain != NOT_MINE) {
            return plain;
        }
        if (v instanceof byte[]) {
            return Json.hex((byte[]) v);
        }
        if (v.getClass().isArray()) {
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < Array.getLength(v); i++) {
                out.add(kryo(Array.get(v, i), kryo, v.getClass().getComponentType()));
            }
            return out;
        }
        if (v instanceof Map) {
            TreeMap<String, Object> out = Json.obj();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                Object k = kryo(e.getKey(), kryo, null);
                out.put(k instanceof String ? (String) k : Json.render(k), kryo(e.getValue(), kryo, null));
            }
            return out;
        }
        if (v instanceof Collection) {
            List<Object> out = new ArrayList<>();
            for (Object e : (Collection<?>) v) {
                out.add(kryo(e, kryo, null));
            }
            return out;
        }
        // A class under Kryo's FieldSerializer: its fields by name (those Kryo writes).
        TreeMap<String, Object> out = Json.obj();
        for (Class<?> c = v.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                int m = f.getModifiers();
                if (Modifier.isStatic(m) || Modifier.isTransient(m) || f.isSynthetic()) {
                    continue;
                }
                try {
                    f.setAccessible(true);
                    out.put(f.getName(), kryo(f.get(v), kryo, f.getType()));
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return out;
    }

    /** A Protobuf message by its set fields' proto names (maps as objects, enums by name, bytes as hex). */
    static Object proto(Message m) {
        TreeMap<String, Object> out = Json.obj();
        for (Map.Entry<FieldDescriptor, Object> e : m.getAllFields().entrySet()) {
            FieldDescriptor fd = e.getKey();
            Object val = e.getValue();
            if (fd.isMapField()) {
                TreeMap<String, Object> map = Json.obj();
                for (Object entry : (List<?>) val) {
                    Message me = (Message) entry;
                    Object k = protoScalar(me.getField(me.getDescriptorForType().findFieldByName("key")));
                    map.put(k instanceof String ? (String) k : Json.render(k), protoScalar(me.getField(me.getDescriptorForType().findFieldByName("value"))));
                }
                out.put(fd.getName(), map);
            } else if (fd.isRepeated()) {
                List<Object> l = new ArrayList<>();
                for (Object x : (List<?>) val) {
                    l.add(protoScalar(x));
                }
                out.put(fd.getName(), l);
            } else {
                out.put(fd.getName(), protoScalar(val));
            }
        }
        return out;
    }

    private static Object protoScalar(Object x) {
        if (x instanceof Message) {
            return proto((Message) x);
        }
        if (x instanceof ByteString) {
            return Json.hex(((ByteString) x).toByteArray());
        }
        if (x instanceof com.google.protobuf.Descriptors.EnumValueDescriptor) {
            return ((com.google.protobuf.Descriptors.EnumValueDescriptor) x).getName();
        }
        if (x instanceof Integer || x instanceof Long) {
            return ((Number) x).longValue();
        }
        if (x instanceof Float || x instanceof Double) {
            return Json.num(((Number) x).doubleValue());
        }
        return x;
    }
}
