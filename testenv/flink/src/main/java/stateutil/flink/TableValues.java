package stateutil.flink;

import java.util.ArrayList;
import java.util.List;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.LogicalType;
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
        return row((RowData) v, lt instanceof RowType ? (RowType) lt : null);
    }

    static List<Object> row(RowData r, RowType rt) {
        List<Object> out = new ArrayList<>(r.getArity());
        for (int i = 0; i < r.getArity(); i++) {
            if (rt != null && i < rt.getFieldCount()) {
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

    static Object field(Object v, LogicalType t) {
        if (v == null) {
            return null;
        }
        if (v instanceof RowData) {
            return row((RowData) v, t instanceof RowType ? (RowType) t : null);
        }
        if (v instanceof ArrayData && t instanceof ArrayType) {
            LogicalType et = ((ArrayType) t).getElementType();
            ArrayData a = (ArrayData) v;
            ArrayData.ElementGetter g = ArrayData.createElementGetter(et);
            List<Object> out = new ArrayList<>(a.size());
            for (int i = 0; i < a.size(); i++) {
                out.add(field(g.getElementOrNull(a, i), et));
            }
            return out;
        }
        Object e = encode(v, null);
        return e == NOT_TABLE ? Json.enc(v, null) : e;
    }
}
