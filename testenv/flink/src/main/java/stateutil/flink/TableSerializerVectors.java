package stateutil.flink;

import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.dataview.ListView;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericMapData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RawValueData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.conversion.DataStructureConverter;
import org.apache.flink.table.data.conversion.DataStructureConverters;
import org.apache.flink.table.dataview.ListViewSerializer;
import org.apache.flink.table.dataview.MapViewSerializer;
import org.apache.flink.table.dataview.NullAwareMapSerializer;
import org.apache.flink.table.dataview.NullSerializer;
import org.apache.flink.table.runtime.operators.window.CountWindow;
import org.apache.flink.table.runtime.operators.window.TimeWindow;
import org.apache.flink.table.runtime.typeutils.ArrayDataSerializer;
import org.apache.flink.table.runtime.typeutils.BinaryRowDataSerializer;
import org.apache.flink.table.runtime.typeutils.DecimalDataSerializer;
import org.apache.flink.table.runtime.typeutils.ExternalSerializer;
import org.apache.flink.table.runtime.typeutils.LinkedListSerializer;
import org.apache.flink.table.runtime.typeutils.MapDataSerializer;
import org.apache.flink.table.runtime.typeutils.PagedTypeSerializer;
import org.apache.flink.table.runtime.typeutils.RawValueDataSerializer;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.runtime.typeutils.StringDataSerializer;
import org.apache.flink.table.runtime.typeutils.TimestampDataSerializer;
import org.apache.flink.table.runtime.typeutils.WindowKeySerializer;
import org.apache.flink.table.runtime.util.WindowKey;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RawType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.StructuredType;
import org.apache.flink.table.types.logical.VarCharType;

/**
 * Byte vectors of the Table runtime's serializers (flink-table-runtime, and flink-table-common's
 * DataView serializers) as this Flink version writes them: per serializer, its snapshot as a
 * keyed state's meta info stores it (TypeSerializerSnapshotSerializationUtil: a proxy version,
 * the snapshot class, its version and body), and values it serialized, each with the JSON that
 * stands for it, worked out from the Java value (testenv/flink/README.md "Witness values"), or
 * "not_decoded" where the snapshot does not give what decoding needs. One JSON object a line.
 */
final class TableSerializerVectors {
    private TableSerializerVectors() {}

    /** Stands in for the JSON of a value whose serializer records too little to decode it. */
    static final Object NOT_DECODED = new Object();

    /** The implementation class of the structured type below (an accumulator's shape). */
    public static final class Point {
        public long x;
        public String label;
    }

    static void write(Path out) throws Exception {
        try (PrintStream p = new PrintStream(Files.newOutputStream(out), false, "UTF-8")) {
            for (Object[] c : cases()) {
                p.println(line((String) c[0], (TypeSerializer<?>) c[1], Arrays.copyOfRange(c, 2, c.length)));
            }
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static List<Object[]> cases() throws Exception {
        List<Object[]> cs = new ArrayList<>();
        cs.add(new Object[] {"decimal-compact", new DecimalDataSerializer(10, 2),
            dec("-1234.56", 10, 2), null, dec("0.00", 10, 2), null, dec("99999999.99", 10, 2), null});
        cs.add(new Object[] {"decimal-wide", new DecimalDataSerializer(30, 5),
            dec("123456789012345678901.23456", 30, 5), null, dec("-0.00001", 30, 5), null, dec("-128.00000", 30, 5), null});
        cs.add(new Object[] {"timestamp-3", new TimestampDataSerializer(3),
            TimestampData.fromEpochMillis(1700000000123L), null, TimestampData.fromEpochMillis(-1L), null});
        cs.add(new Object[] {"timestamp-9", new TimestampDataSerializer(9),
            TimestampData.fromEpochMillis(1700000000123L, 456789), null, TimestampData.fromEpochMillis(-5L, 0), null});
        ArrayType bigints = new ArrayType(new BigIntType());
        cs.add(new Object[] {"array-bigint", new ArrayDataSerializer(new BigIntType()),
            new GenericArrayData(new Long[] {1L, null, -3L}), null, new GenericArrayData(new Long[0]), null});
        VarCharType varchar = new VarCharType(VarCharType.MAX_LENGTH);
        cs.add(new Object[] {"array-varchar", new ArrayDataSerializer(varchar),
            new GenericArrayData(new Object[] {StringData.fromString("a"), StringData.fromString("a string of some length"), null}), null});
        Map<Object, Object> m = new LinkedHashMap<>();
        m.put(StringData.fromString("x"), 1);
        m.put(StringData.fromString("yy"), null);
        cs.add(new Object[] {"map-varchar-int", new MapDataSerializer(varchar, new IntType()), new GenericMapData(m), null});
        cs.add(new Object[] {"raw-long", new RawValueDataSerializer<>(LongSerializer.INSTANCE), RawValueData.fromObject(42L), 42L});
        cs.add(new Object[] {"raw-string", new RawValueDataSerializer<>(StringSerializer.INSTANCE), RawValueData.fromObject("héllo"), "héllo"});
        cs.add(new Object[] {"linkedlist-mask", new LinkedListSerializer<>(LongSerializer.INSTANCE, true),
            new LinkedList<>(Arrays.asList(1L, null, 3L)), Arrays.asList(1L, null, 3L),
            new LinkedList<>(Arrays.asList(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, null)), Arrays.asList(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, null),
            new LinkedList<>(java.util.Collections.nCopies(40, null)), java.util.Collections.nCopies(40, null)});
        cs.add(new Object[] {"linkedlist-nomask", new LinkedListSerializer<>(LongSerializer.INSTANCE, false),
            new LinkedList<>(Arrays.asList(4L, 5L)), Arrays.asList(4L, 5L)});
        cs.add(new Object[] {"dataview-null", NullSerializer.INSTANCE, null, null});
        ListView<Long> lv = new ListView<>();
        lv.setList(new ArrayList<>(Arrays.asList(1L, 2L)));
        cs.add(new Object[] {"listview", new ListViewSerializer<>(new ListSerializer<>(LongSerializer.INSTANCE)), lv, Arrays.asList(1L, 2L)});
        MapView<String, Long> mv = new MapView<>();
        mv.setMap(new LinkedHashMap<>(Map.of("a", 1L)));
        TreeMap<String, Object> mvJson = Json.obj();
        mvJson.put("a", 1L);
        cs.add(new Object[] {"mapview", new MapViewSerializer<>(new MapSerializer<>(StringSerializer.INSTANCE, LongSerializer.INSTANCE)), mv, mvJson});
        Map<String, Long> nullable = new LinkedHashMap<>();
        nullable.put(null, 1L);
        nullable.put("b", null);
        cs.add(new Object[] {"nullawaremap", new NullAwareMapSerializer<>(StringSerializer.INSTANCE, LongSerializer.INSTANCE),
            nullable, Arrays.asList(Arrays.asList(null, 1L), Arrays.asList("b", null))});
        TreeMap<String, Object> cw = Json.obj();
        cw.put("id", 7L);
        cs.add(new Object[] {"countwindow", new CountWindow.Serializer(), new CountWindow(7), cw});
        TreeMap<String, Object> tw = Json.obj();
        tw.put("start", 0L);
        tw.put("end", 1000L);
        cs.add(new Object[] {"timewindow", new TimeWindow.Serializer(), TimeWindow.of(0, 1000), tw});
        BinaryRowData binary = new RowDataSerializer(new BigIntType(), varchar).toBinaryRow(GenericRowData.of(5L, StringData.fromString("k")));
        cs.add(new Object[] {"binaryrow", new BinaryRowDataSerializer(2), binary, NOT_DECODED});
        cs.add(new Object[] {"windowkey", new WindowKeySerializer((PagedTypeSerializer) new BinaryRowDataSerializer(2)), new WindowKey(1000L, binary), NOT_DECODED});
        cs.add(new Object[] {"stringdata", StringDataSerializer.INSTANCE, StringData.fromString("héllo"), "héllo"});
        cs.add(external("external-decimal", DataTypes.DECIMAL(10, 2), new BigDecimal("3.14")));
        cs.add(external("external-timestamp", DataTypes.TIMESTAMP(6), LocalDateTime.of(2023, 11, 14, 22, 13, 20, 123456000)));
        cs.add(external("external-array", DataTypes.ARRAY(DataTypes.BIGINT()), new Long[] {7L, null}));
        cs.add(external("external-map", DataTypes.MAP(DataTypes.STRING(), DataTypes.INT()), Map.of("k", 3)));

        StructuredType point = StructuredType.newBuilder(Point.class)
                .attributes(Arrays.asList(new StructuredType.StructuredAttribute("x", new BigIntType()),
                        new StructuredType.StructuredAttribute("label", varchar)))
                .build();
        RawType<Long> raw = new RawType<>(Long.class, LongSerializer.INSTANCE);
        LogicalType[] types = {point, raw, new MapType(varchar, bigints)};
        RowData row = GenericRowData.of(GenericRowData.of(3L, StringData.fromString("p")), RawValueData.fromObject(9L),
                new GenericMapData(Map.of(StringData.fromString("m"), new GenericArrayData(new Long[] {1L}))));
        cs.add(new Object[] {"rowdata-structured", new RowDataSerializer(types), row, TableValues.row(row, RowType.of(types))});

        // Flink 2.3's SinkUpsertMaterializer v2 state (linked sequenced multiset), where present.
        if (present("org.apache.flink.table.runtime.operators.sink.SortedLongSerializer")) {
            cs.add(new Object[] {"sortedlong", (TypeSerializer) Class.forName("org.apache.flink.table.runtime.operators.sink.SortedLongSerializer").getField("INSTANCE").get(null),
                5L, 5L, -5L, -5L});
            Object global = Class.forName("org.apache.flink.table.runtime.operators.window.GlobalWindow").getMethod("get").invoke(null);
            cs.add(new Object[] {"globalwindow", (TypeSerializer) Class.forName("org.apache.flink.table.runtime.operators.window.GlobalWindow$Serializer").getConstructor().newInstance(),
                global, "GlobalWindow"});
            RowDataSerializer rows = new RowDataSerializer(new BigIntType(), varchar);
            RowData r = GenericRowData.of(1L, StringData.fromString("v"));
            String linked = "org.apache.flink.table.runtime.sequencedmultisetstate.linked.";
            Object node = construct(linked + "Node", new Class<?>[] {RowData.class, long.class, Long.class, Long.class, Long.class, Long.class}, r, 3L, 2L, null, 4L, 1700000000000L);
            TreeMap<String, Object> nodeJson = Json.obj();
            nodeJson.put("row", TableValues.row(r, RowType.of(new BigIntType(), varchar)));
            nodeJson.put("seqNo", 3L);
            nodeJson.put("prevSeqNo", 2L);
            nodeJson.put("nextSeqNo", null);
            nodeJson.put("nextSeqNoForRecord", 4L);
            nodeJson.put("timestamp", 1700000000000L);
            cs.add(new Object[] {"sqn-node", (TypeSerializer) construct(linked + "NodeSerializer", new Class<?>[] {TypeSerializer.class}, rows), node, nodeJson});
            // RowDataKey's snapshot keeps the generated equaliser and hash function (their code is
            // never compiled here: the vector needs only their Java serialization).
            Object equaliser = construct("org.apache.flink.table.runtime.generated.GeneratedRecordEqualiser",
                    new Class<?>[] {String.class, String.class, Object[].class}, "KeyEqualiser", "// not compiled", new Object[0]);
            Object hash = construct("org.apache.flink.table.runtime.generated.GeneratedHashFunction",
                    new Class<?>[] {String.class, String.class, Object[].class, org.apache.flink.configuration.ReadableConfig.class},
                    "KeyHash", "// not compiled", new Object[0], new org.apache.flink.configuration.Configuration());
            Class<?> eqClass = Class.forName("org.apache.flink.table.runtime.generated.RecordEqualiser");
            Class<?> hashClass = Class.forName("org.apache.flink.table.runtime.generated.HashFunction");
            Object eq = java.lang.reflect.Proxy.newProxyInstance(eqClass.getClassLoader(), new Class<?>[] {eqClass}, (pr, m2, a2) -> true);
            Object hf = java.lang.reflect.Proxy.newProxyInstance(hashClass.getClassLoader(), new Class<?>[] {hashClass}, (pr, m2, a2) -> 0);
            TypeSerializer keys = (TypeSerializer) construct(linked + "RowDataKeySerializer",
                    new Class<?>[] {TypeSerializer.class, eqClass, hashClass, equaliser.getClass(), hash.getClass()}, rows, eq, hf, equaliser, hash);
            cs.add(new Object[] {"sqn-rowdatakey", keys, construct(linked + "RowDataKey", new Class<?>[] {RowData.class, eqClass, hashClass}, r, eq, hf),
                TableValues.row(r, RowType.of(new BigIntType(), varchar))});
            for (String[] n : new String[][] {{"MetaSqnInfo", "highSqn", "size"}, {"RowSqnInfo", "firstSqn", "lastSqn"}}) {
                TreeMap<String, Object> j = Json.obj();
                j.put(n[1], 10L);
                j.put(n[2], 20L);
                cs.add(new Object[] {"sqn-" + n[0].toLowerCase(), (TypeSerializer) construct(linked + n[0] + "Serializer", new Class<?>[0]),
                    construct(linked + n[0], new Class<?>[] {long.class, long.class}, 10L, 20L), j});
            }
        }
        return cs;
    }

    static Object[] external(String name, DataType type, Object value) {
        DataStructureConverter<Object, Object> conv = DataStructureConverters.getConverter(type);
        conv.open(TableSerializerVectors.class.getClassLoader());
        return new Object[] {name, ExternalSerializer.of(type), value, TableValues.field(conv.toInternalOrNull(value), type.getLogicalType())};
    }

    static DecimalData dec(String text, int precision, int scale) {
        return DecimalData.fromBigDecimal(new BigDecimal(text), precision, scale);
    }

    static boolean present(String className) {
        try {
            Class.forName(className);
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    static Object construct(String className, Class<?>[] params, Object... args) throws Exception {
        Constructor<?> c = Class.forName(className).getDeclaredConstructor(params);
        c.setAccessible(true);
        return c.newInstance(args);
    }

    /** One vector: the serializer's snapshot and each (value, JSON) pair serialized. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static String line(String name, TypeSerializer s, Object[] pairs) throws Exception {
        DataOutputSerializer snap = new DataOutputSerializer(256);
        writeSnapshot(snap, s);
        List<Object> values = new ArrayList<>();
        for (int i = 0; i < pairs.length; i += 2) {
            Object v = pairs[i];
            Object json = pairs[i + 1];
            if (v instanceof DecimalData && json == null) {
                json = new Json.Num(((DecimalData) v).toBigDecimal().toPlainString());
            } else if (json == null && (v instanceof TimestampData || v instanceof GenericArrayData || v instanceof GenericMapData)) {
                json = TableValues.field(v, logicalTypeOf(s));
            }
            DataOutputSerializer out = new DataOutputSerializer(64);
            s.serialize(v, out);
            TreeMap<String, Object> o = Json.obj();
            o.put("bytes", Json.hex(out.getCopyOfBuffer()));
            if (json == NOT_DECODED) {
                o.put("not_decoded", true);
            } else {
                o.put("json", json);
            }
            values.add(o);
        }
        TreeMap<String, Object> o = Json.obj();
        o.put("name", name);
        o.put("serializer", s.getClass().getName());
        o.put("snapshot", Json.hex(snap.getCopyOfBuffer()));
        o.put("values", values);
        return Json.render(o);
    }

    /** The logical type the data serializers keep (for the JSON of their values). */
    static LogicalType logicalTypeOf(TypeSerializer<?> s) {
        if (s instanceof TimestampDataSerializer) {
            return new org.apache.flink.table.types.logical.TimestampType((Integer) SerializerJson.field(s, "precision"));
        }
        if (s instanceof ArrayDataSerializer) {
            return new ArrayType((LogicalType) SerializerJson.field(s, "eleType"));
        }
        if (s instanceof MapDataSerializer) {
            return new MapType((LogicalType) SerializerJson.field(s, "keyType"), (LogicalType) SerializerJson.field(s, "valueType"));
        }
        throw new IllegalArgumentException("no logical type for " + s);
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
