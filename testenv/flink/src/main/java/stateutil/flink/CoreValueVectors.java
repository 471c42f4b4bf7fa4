package stateutil.flink;

import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

import org.apache.flink.api.common.typeutils.SingleThreadAccessCheckingTypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.BooleanValueSerializer;
import org.apache.flink.api.common.typeutils.base.ByteValueSerializer;
import org.apache.flink.api.common.typeutils.base.CharValueSerializer;
import org.apache.flink.api.common.typeutils.base.DoubleValueSerializer;
import org.apache.flink.api.common.typeutils.base.FloatValueSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.IntValueSerializer;
import org.apache.flink.api.common.typeutils.base.LongValueSerializer;
import org.apache.flink.api.common.typeutils.base.NullValueSerializer;
import org.apache.flink.api.common.typeutils.base.ShortValueSerializer;
import org.apache.flink.api.common.typeutils.base.StringValueSerializer;
import org.apache.flink.api.common.typeutils.base.VoidSerializer;
import org.apache.flink.api.java.typeutils.runtime.CopyableValueSerializer;
import org.apache.flink.api.java.typeutils.runtime.ValueSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.types.BooleanValue;
import org.apache.flink.types.ByteValue;
import org.apache.flink.types.CharValue;
import org.apache.flink.types.DoubleValue;
import org.apache.flink.types.FloatValue;
import org.apache.flink.types.IntValue;
import org.apache.flink.types.LongValue;
import org.apache.flink.types.NullValue;
import org.apache.flink.types.ShortValue;
import org.apache.flink.types.StringValue;

/**
 * Byte vectors of flink-core's serializers of Flink's Value types, of Void, and of the
 * single-thread-checking wrapper, as this Flink version writes them: per serializer, its snapshot
 * as a keyed state's meta info stores it, its getLength(), and values it serialized, each with the JSON that stands
 * for it (worked out from the Java value) and the value's own hashCode (what key groups are
 * computed from). One JSON object a line, to the file given as the only argument.
 *
 * <p>Run by scripts/flink-core-value-vectors.sh on the harness's class path.
 */
final class CoreValueVectors {
    private CoreValueVectors() {}

    public static void main(String[] args) throws Exception {
        try (PrintStream p = new PrintStream(Files.newOutputStream(Path.of(args[0])), true, "UTF-8")) {
            p.println(line("BooleanValue", BooleanValueSerializer.INSTANCE, new BooleanValue(true), new BooleanValue(false)));
            p.println(line("ByteValue", ByteValueSerializer.INSTANCE, new ByteValue((byte) -128), new ByteValue((byte) 0), new ByteValue((byte) 127)));
            p.println(line("CharValue", CharValueSerializer.INSTANCE, new CharValue('a'), new CharValue('\u00e9'), new CharValue('\u20ac')));
            p.println(line("DoubleValue", DoubleValueSerializer.INSTANCE, new DoubleValue(1.5), new DoubleValue(1e300), new DoubleValue(-2.5e-310)));
            p.println(line("FloatValue", FloatValueSerializer.INSTANCE, new FloatValue(0.1f), new FloatValue(-3.5f), new FloatValue(Float.MAX_VALUE)));
            p.println(line("IntValue", IntValueSerializer.INSTANCE, new IntValue(Integer.MIN_VALUE), new IntValue(-1), new IntValue(123456)));
            p.println(line("LongValue", LongValueSerializer.INSTANCE, new LongValue(Long.MIN_VALUE), new LongValue(-5), new LongValue(1L << 40)));
            p.println(line("ShortValue", ShortValueSerializer.INSTANCE, new ShortValue((short) -300), new ShortValue(Short.MAX_VALUE)));
            p.println(line("StringValue", StringValueSerializer.INSTANCE, new StringValue(""), new StringValue("h\u00e9llo"),
                    new StringValue("\ud83d\ude00 \u65e5\u672c"), new StringValue("x".repeat(200))));
            p.println(line("NullValue", NullValueSerializer.INSTANCE, NullValue.getInstance()));
            p.println(line("Void", VoidSerializer.INSTANCE, (Object) null));
            p.println(line("CopyableValue-IntValue", new CopyableValueSerializer<>(IntValue.class), new IntValue(7)));
            p.println(line("CopyableValue-NullValue", new CopyableValueSerializer<>(NullValue.class), NullValue.getInstance()));
            p.println(line("CopyableValue-StringValue", new CopyableValueSerializer<>(StringValue.class), new StringValue("abc")));
            p.println(line("Value-StringValue", new ValueSerializer<>(StringValue.class), new StringValue("xyz")));
            p.println(line("SingleThreadChecking-Integer", new SingleThreadAccessCheckingTypeSerializer<>(IntSerializer.INSTANCE), 42));
        }
    }

    /** One vector: the serializer's snapshot, and each value serialized, with its JSON and hashCode. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static String line(String name, TypeSerializer s, Object... values) throws Exception {
        DataOutputSerializer snap = new DataOutputSerializer(256);
        writeSnapshot(snap, s);
        List<Object> out = new ArrayList<>();
        for (Object v : values) {
            DataOutputSerializer bytes = new DataOutputSerializer(64);
            s.serialize(v, bytes);
            TreeMap<String, Object> o = Json.obj();
            o.put("bytes", Json.hex(bytes.getCopyOfBuffer()));
            o.put("json", json(v));
            o.put("hash", v == null ? null : (long) v.hashCode());
            out.add(o);
        }
        TreeMap<String, Object> o = Json.obj();
        o.put("name", name);
        o.put("serializer", s.getClass().getName());
        o.put("snapshot", Json.hex(snap.getCopyOfBuffer()));
        o.put("length", (long) s.getLength());
        o.put("values", out);
        return Json.render(o);
    }

    /** A value as JSON: a float as the double Java widens it to, a char a one-character string. */
    static Object json(Object v) {
        if (v == null || v instanceof NullValue) {
            return null;
        }
        if (v instanceof BooleanValue) {
            return ((BooleanValue) v).getValue();
        }
        if (v instanceof ByteValue) {
            return (long) ((ByteValue) v).getValue();
        }
        if (v instanceof ShortValue) {
            return (long) ((ShortValue) v).getValue();
        }
        if (v instanceof IntValue) {
            return (long) ((IntValue) v).getValue();
        }
        if (v instanceof Integer) {
            return (long) (Integer) v;
        }
        if (v instanceof LongValue) {
            return ((LongValue) v).getValue();
        }
        if (v instanceof CharValue) {
            return String.valueOf(((CharValue) v).getValue());
        }
        if (v instanceof FloatValue) {
            return new Json.Num(Double.toString(((FloatValue) v).getValue()));
        }
        if (v instanceof DoubleValue) {
            return new Json.Num(Double.toString(((DoubleValue) v).getValue()));
        }
        if (v instanceof StringValue) {
            return v.toString();
        }
        throw new IllegalArgumentException("no JSON for " + v.getClass());
    }

    /** Writes a snapshot as a keyed state's meta info does (the utility's signature changed in 2.0). */
    static void writeSnapshot(DataOutputSerializer out, TypeSerializer<?> s) throws Exception {
        TypeSerializerSnapshot<?> snap = s.snapshotConfiguration();
        Class<?> util = Class.forName("org.apache.flink.api.common.typeutils.TypeSerializerSnapshotSerializationUtil");
        for (Method m : util.getMethods()) {
            if (m.getName().equals("writeSerializerSnapshot")) {
                Object[] args = m.getParameterCount() == 2 ? new Object[] {out, snap} : new Object[] {out, snap, s};
                m.invoke(null, args);
                return;
            }
        }
        throw new IllegalStateException("no writeSerializerSnapshot in " + util);
    }
}
