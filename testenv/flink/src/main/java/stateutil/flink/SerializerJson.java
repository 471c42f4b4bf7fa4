package stateutil.flink;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.api.java.tuple.Tuple;
import org.apache.flink.api.java.typeutils.runtime.TupleSerializerBase;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

/**
 * The dump encoding of a value guided by the serializer Flink wrote it with (restored from the
 * snapshot's serializer snapshot), for state whose TypeInformation the job never sees: the
 * Table planner's operators.
 */
final class SerializerJson {
    private SerializerJson() {}

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Object enc(Object v, TypeSerializer<?> s) {
        if (v == null) {
            return null;
        }
        if (s instanceof RowDataSerializer) {
            return TableValues.withKind((RowData) v, TableValues.row((RowData) v, RowType.of((LogicalType[]) field(s, "types"))));
        }
        if (s instanceof ListSerializer) {
            TypeSerializer<?> es = ((ListSerializer<?>) s).getElementSerializer();
            List<Object> out = new ArrayList<>();
            for (Object e : (List<?>) v) {
                out.add(enc(e, es));
            }
            return out;
        }
        if (s instanceof MapSerializer) {
            MapSerializer<?, ?> ms = (MapSerializer<?, ?>) s;
            return map((Map<?, ?>) v, ms.getKeySerializer(), ms.getValueSerializer());
        }
        if (v instanceof java.util.SortedMap) {
            // The planner's SortedMapSerializer: [key, value] pairs in the map's order.
            TypeSerializer<?> ks = (TypeSerializer<?>) call(s, "getKeySerializer"), vs = (TypeSerializer<?>) call(s, "getValueSerializer");
            List<Object> out = new ArrayList<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.add(java.util.Arrays.asList(enc(e.getKey(), ks), enc(e.getValue(), vs)));
            }
            return out;
        }
        if (s instanceof TupleSerializerBase && v instanceof Tuple) {
            TypeSerializer<?>[] fs = ((TupleSerializerBase) s).getFieldSerializers();
            Tuple t = (Tuple) v;
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < t.getArity(); i++) {
                out.add(enc(t.getField(i), fs[i]));
            }
            return out;
        }
        if (v.getClass().getSimpleName().equals("TaggedUnion")) {
            // CoGroup's window contents: the side the element came in on (the class moved
            // to org.apache.flink.util in Flink 2).
            TreeMap<String, Object> out = Json.obj();
            if ((Boolean) call(v, "isOne")) {
                out.put("one", enc(call(v, "getOne"), (TypeSerializer<?>) field(s, "oneSerializer")));
            } else {
                out.put("two", enc(call(v, "getTwo"), (TypeSerializer<?>) field(s, "twoSerializer")));
            }
            return out;
        }
        Object typed = WitnessValues.enc(v, s);
        if (typed != WitnessValues.NOT_MINE) {
            return typed;
        }
        if (v instanceof org.apache.flink.streaming.api.windowing.windows.GlobalWindow) {
            return "GlobalWindow";
        }
        if (v.getClass().getSimpleName().equals("TimeWindow")) { // DataStream's and the planner's
            TreeMap<String, Object> out = Json.obj();
            out.put("start", call(v, "getStart"));
            out.put("end", call(v, "getEnd"));
            return out;
        }
        return TableValues.field(v, null);
    }

    static TreeMap<String, Object> map(Map<?, ?> m, TypeSerializer<?> ks, TypeSerializer<?> vs) {
        TreeMap<String, Object> out = Json.obj();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            Object k = enc(e.getKey(), ks);
            out.put(k instanceof String ? (String) k : Json.render(k), enc(e.getValue(), vs));
        }
        return out;
    }

    static Object field(Object o, String name) {
        try {
            Field f = o.getClass().getDeclaredField(name);
            f.setAccessible(true);
            return f.get(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(o.getClass() + "." + name, e);
        }
    }

    static Object call(Object o, String name) {
        try {
            Method m = o.getClass().getMethod(name);
            m.setAccessible(true);
            return m.invoke(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(o.getClass() + "." + name + "()", e);
        }
    }
}
