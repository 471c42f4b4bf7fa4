package stateutil.flink;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RawValueData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.MultisetType;
import org.apache.flink.table.types.logical.RawType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.table.types.logical.RowType;

/** Dump encoding of Flink's internal table data (RowData keys and values). */
final class TableValues {
    static final Object NOT_TABLE = new Object();

    private TableValues() {}

    static Object encode(Object v, TypeInformation<?> t) {
        if (v instanceof StringData) {
            return v.toString();
        }
        if (v instanceof DecimalData) {
            return new Json.Num(((DecimalData) v).toBigDecimal().toString());
        }
        if (!(v instanceof RowData)) {
            return NOT_TABLE;
        }
        LogicalType lt = t instanceof InternalTypeInfo ? ((InternalTypeInfo<?>) t).toLogicalType() : null;
        return withKind((RowData) v, row((RowData) v, lt instanceof RowType ? (RowType) lt : null));
    }

    /** A row whose kind is not INSERT as {"@rowkind": KIND, "@row": row}, as stateutil prints it. */
    static Object withKind(RowData r, Object rendered) {
        if (r.getRowKind() == org.apache.flink.types.RowKind.INSERT) {
            return rendered;
        }
        TreeMap<String, Object> out = Json.obj();
        out.put("@rowkind", r.getRowKind().name());
        out.put("@row", rendered);
        return out;
    }

    static List<Object> row(RowData r, RowType rt) {
        List<Object> out = new ArrayList<>(r.getArity());
        for (int i = 0; i < r.getArity(); i++) {
            // The null bit, not the type: a NOT NULL field can hold null in state (1.x keeps
            // a proctime column unset), and a type-driven getter would read its slot as 0.
            if (r.isNullAt(i)) {
                out.add(null);
            } else if (rt != null && i < rt.getFieldCount()) {
                LogicalType ft = rt.getTypeAt(i);
                out.add(field(RowData.createFieldGetter(ft, i).getFieldOrNull(r), ft));
            } else if (r instanceof GenericRowData) {
                out.add(field(((GenericRowData) r).getField(i), null));
            } else {
                throw new IllegalArgumentException("RowData field " + i + " without a logical type");
            }
        }
        return out;
    }

    static List<Object> array(ArrayData a, LogicalType et) {
        ArrayData.ElementGetter g = ArrayData.createElementGetter(et);
        List<Object> out = new ArrayList<>(a.size());
        for (int i = 0; i < a.size(); i++) {
            out.add(a.isNullAt(i) ? null : field(g.getElementOrNull(a, i), et));
        }
        return out;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Object field(Object v, LogicalType t) {
        if (v == null) {
            return null;
        }
        if (v instanceof RowData && t instanceof RowType) {
            // A nested ROW's fields by name, as its type records them.
            RowType rt = (RowType) t;
            List<Object> values = row((RowData) v, rt);
            TreeMap<String, Object> out = Json.obj();
            for (int i = 0; i < values.size(); i++) {
                out.put(rt.getFieldNames().get(i), values.get(i));
            }
            return withKind((RowData) v, out);
        }
        if (v instanceof RowData && t instanceof org.apache.flink.table.types.logical.StructuredType) {
            // A structured type (an aggregate function's accumulator): its attributes by name.
            List<org.apache.flink.table.types.logical.StructuredType.StructuredAttribute> attrs =
                    ((org.apache.flink.table.types.logical.StructuredType) t).getAttributes();
            RowType rt = RowType.of(attrs.stream().map(a -> a.getType()).toArray(LogicalType[]::new),
                    attrs.stream().map(a -> a.getName()).toArray(String[]::new));
            return field(v, rt);
        }
        if (v instanceof RowData && t instanceof org.apache.flink.table.types.logical.DistinctType) {
            return field(v, ((org.apache.flink.table.types.logical.DistinctType) t).getSourceType());
        }
        if (v instanceof RowData) {
            return withKind((RowData) v, row((RowData) v, null));
        }
        if (v instanceof ArrayData && t instanceof ArrayType) {
            return array((ArrayData) v, ((ArrayType) t).getElementType());
        }
        if (v instanceof MapData && (t instanceof MapType || t instanceof MultisetType)) {
            // [key, value] pairs in the map's own order.
            MapData m = (MapData) v;
            LogicalType kt = t instanceof MapType ? ((MapType) t).getKeyType() : ((MultisetType) t).getElementType();
            LogicalType vt = t instanceof MapType ? ((MapType) t).getValueType() : new IntType(false);
            List<Object> keys = array(m.keyArray(), kt), values = array(m.valueArray(), vt);
            List<Object> out = new ArrayList<>(keys.size());
            for (int i = 0; i < keys.size(); i++) {
                out.add(Arrays.asList(keys.get(i), values.get(i)));
            }
            return out;
        }
        if (v instanceof RawValueData && t instanceof RawType) {
            // A RAW value as its class and the bytes its serializer writes.
            RawType<?> rt = (RawType<?>) t;
            TreeMap<String, Object> out = Json.obj();
            out.put("class", rt.getOriginatingClass().getName());
            out.put("bytes", Json.hex(((RawValueData<?>) v).toBytes((org.apache.flink.api.common.typeutils.TypeSerializer) rt.getTypeSerializer())));
            return out;
        }
        if (v instanceof TimestampData) {
            // Compact timestamps are their milliseconds; longer ones keep their nanos.
            TimestampData ts = (TimestampData) v;
            if (t != null && LogicalTypeChecks.getPrecision(t) <= 3) {
                return ts.getMillisecond();
            }
            TreeMap<String, Object> out = Json.obj();
            out.put("millisecond", ts.getMillisecond());
            out.put("nanoOfMillisecond", (long) ts.getNanoOfMillisecond());
            return out;
        }
        Object e = encode(v, null);
        return e == NOT_TABLE ? Json.enc(v, null) : e;
    }
}
