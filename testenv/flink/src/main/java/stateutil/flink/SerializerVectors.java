package stateutil.flink;

import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.GenericArraySerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.java.typeutils.runtime.CopyableValueSerializer;
import org.apache.flink.api.java.typeutils.runtime.EitherSerializer;
import org.apache.flink.api.java.typeutils.runtime.ValueSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.StreamElement;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.types.Either;
import org.apache.flink.types.IntValue;
import org.apache.flink.types.StringValue;
import org.apache.flink.types.Value;

/**
 * Byte vectors of serializers of flink-core, flink-runtime and flink-streaming-java that the
 * other vector writers leave out, as this Flink version writes them: generic arrays, TTL values
 * (both TTL factories' serializers), TtlAwareSerializer (2.x), timers, StreamElementSerializer,
 * the interval join's BufferEntrySerializer and TwoPhaseCommitSinkFunction's StateSerializer.
 * Per serializer: its snapshot as a keyed state's meta info stores it, and values it serialized,
 * each with the JSON that stands for it, worked out from the Java value. The classes a version
 * lacks are left out. One JSON object a line, to the file given as the only argument.
 *
 * <p>Run by scripts/flink-serializer-vectors.sh on the harness's class path.
 */
final class SerializerVectors {
    private SerializerVectors() {}

    public static void main(String[] args) throws Exception {
        try (PrintStream p = new PrintStream(Files.newOutputStream(Path.of(args[0])), true, "UTF-8")) {
            for (Case c : cases()) {
                p.println(line(c));
            }
        }
    }

    /** One serializer and the values it writes; the snapshot written is its own unless given. */
    static final class Case {
        final String name;
        final TypeSerializer<?> serializer;
        final List<Object> values = new ArrayList<>();
        TypeSerializerSnapshot<?> snapshot;

        Case(String name, TypeSerializer<?> serializer, Object... values) {
            this.name = name;
            this.serializer = serializer;
            this.values.addAll(Arrays.asList(values));
        }

        Case snapshot(TypeSerializerSnapshot<?> s) {
            this.snapshot = s;
            return this;
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static List<Case> cases() throws Exception {
        List<Case> cs = new ArrayList<>();
        cs.add(new Case("genericarray-string", new GenericArraySerializer<>(String.class, StringSerializer.INSTANCE),
                new String[] {"a", null, "h\u00e9llo"}, new String[0], new String[] {null}));
        cs.add(new Case("genericarray-long", new GenericArraySerializer<>(Long.class, LongSerializer.INSTANCE),
                (Object) new Long[] {1L, null, -2L}));

        for (String factory : new String[] {"org.apache.flink.runtime.state.ttl.", "org.apache.flink.runtime.state.v2.ttl."}) {
            if (!present(factory + "TtlStateFactory$TtlSerializer")) {
                continue;
            }
            String tag = factory.contains(".v2.") ? "ttl-v2" : "ttl";
            TypeSerializer<?> ttl = ttlSerializer(factory, StringSerializer.INSTANCE);
            cs.add(new Case(tag + "-string", ttl, new TtlValue<>("v", 1700000000000L), new TtlValue<>(null, -1L), new TtlValue<>("", 0L)));
        }

        if (present("org.apache.flink.runtime.state.ttl.TtlAwareSerializer")) {
            cs.add(new Case("ttlaware-int", ttlAware(IntSerializer.INSTANCE), 42, -7));
            cs.add(new Case("ttlaware-ttl", ttlAware(ttlSerializer("org.apache.flink.runtime.state.ttl.", LongSerializer.INSTANCE)),
                    new TtlValue<>(5L, 1700000000000L)));
            cs.add(new Case("ttlaware-list", ttlAware(new ListSerializer<>(LongSerializer.INSTANCE)), Arrays.asList(1L, 2L), new ArrayList<Long>()));
        }

        TypeSerializer timers = (TypeSerializer) construct("org.apache.flink.streaming.api.operators.TimerSerializer",
                new Class<?>[] {TypeSerializer.class, TypeSerializer.class}, StringSerializer.INSTANCE, VoidNamespaceSerializer.INSTANCE);
        cs.add(new Case("timer-string-void", timers, timer(1700000000000L, "k", VoidNamespace.INSTANCE), timer(-5L, "", VoidNamespace.INSTANCE),
                timer(Long.MIN_VALUE, "x", VoidNamespace.INSTANCE), timer(Long.MAX_VALUE, "y", VoidNamespace.INSTANCE)));
        TypeSerializer windowTimers = (TypeSerializer) construct("org.apache.flink.streaming.api.operators.TimerSerializer",
                new Class<?>[] {TypeSerializer.class, TypeSerializer.class}, LongSerializer.INSTANCE, new TimeWindow.Serializer());
        cs.add(new Case("timer-long-window", windowTimers, timer(999L, 7L, new TimeWindow(0, 1000))));

        List<Object> elements = new ArrayList<>(Arrays.asList(new StreamRecord<>("a", 5L), new StreamRecord<>("b"), new StreamRecord<>(null, -1L),
                new Watermark(1000L), new Watermark(Long.MIN_VALUE), WatermarkStatus.IDLE, WatermarkStatus.ACTIVE,
                new LatencyMarker(123L, new OperatorID(1L, -2L), 3)));
        if (present("org.apache.flink.streaming.runtime.streamrecord.RecordAttributes")) {
            for (boolean backlog : new boolean[] {true, false}) {
                elements.add(construct("org.apache.flink.streaming.runtime.streamrecord.RecordAttributes", new Class<?>[] {boolean.class}, backlog));
            }
        }
        if (present("org.apache.flink.streaming.api.watermark.InternalWatermark")) {
            elements.add(construct("org.apache.flink.streaming.api.watermark.InternalWatermark", new Class<?>[] {long.class, int.class}, 77L, 2));
        }
        cs.add(new Case("streamelement-string", streamElements(StringSerializer.INSTANCE), elements.toArray()));
        cs.add(new Case("streamelement-long", streamElements(LongSerializer.INSTANCE), new StreamRecord<>(9L, 10L)));

        String join = "org.apache.flink.streaming.api.operators.co.IntervalJoinOperator$";
        TypeSerializer entries = (TypeSerializer) construct(join + "BufferEntrySerializer", new Class<?>[] {TypeSerializer.class}, StringSerializer.INSTANCE);
        cs.add(new Case("bufferentry-string", entries, bufferEntry("left", true), bufferEntry(null, false)));
        cs.add(new Case("bufferentry-list", new ListSerializer<>(entries), Arrays.asList(bufferEntry("a", false), bufferEntry("b", true))));

        String sink = present("org.apache.flink.streaming.api.functions.sink.legacy.TwoPhaseCommitSinkFunction")
                ? "org.apache.flink.streaming.api.functions.sink.legacy.TwoPhaseCommitSinkFunction$"
                : "org.apache.flink.streaming.api.functions.sink.TwoPhaseCommitSinkFunction$";
        TypeSerializer states = (TypeSerializer) construct(sink + "StateSerializer", new Class<?>[] {TypeSerializer.class, TypeSerializer.class},
                StringSerializer.INSTANCE, LongSerializer.INSTANCE);
        cs.add(new Case("twophase-state", states,
                sinkState(sink, holder(sink, "txn-1", 1700000000000L), List.of(holder(sink, "txn-0", 1699999999000L), holder(sink, "", -1L)), Optional.of(42L)),
                sinkState(sink, null, List.of(), Optional.empty())));
        TypeSerializer strict = (TypeSerializer) construct(sink + "StateSerializer", new Class<?>[] {TypeSerializer.class, TypeSerializer.class, boolean.class},
                StringSerializer.INSTANCE, IntSerializer.INSTANCE, false);
        cs.add(new Case("twophase-state-nonnull", strict, sinkState(sink, holder(sink, "t", 5L), List.of(holder(sink, "u", 6L)), Optional.empty())));

        TypeSerializer javas = new org.apache.flink.runtime.state.JavaSerializer<>();
        cs.add(new Case("java-plain", javas, "h\u00e9llo", "", 7, -5L, true, 1.5, 'x', (short) 3, (byte) -1, 0.25f, null,
                java.util.concurrent.TimeUnit.SECONDS, String.class));
        cs.add(new Case("java-arrays", javas, (Object) new int[] {1, -2}, (Object) new byte[] {1, 2, (byte) 255}, (Object) new String[] {"a", null},
                (Object) new long[0][]));
        Point p = new Point(3, "p", new Point(4, null, null));
        cs.add(new Case("java-objects", javas, p, new ArrayList<>(Arrays.asList("a", "b")), hashMapOf("k", 7)));
        if (present("org.apache.flink.types.variant.Variant")) {
            cs.add(new Case("variant", (TypeSerializer) Class.forName("org.apache.flink.api.common.typeutils.base.VariantSerializer").getField("INSTANCE").get(null),
                    variants().toArray()));
        }
        if (present("org.apache.flink.types.bitmap.Bitmap")) {
            TypeSerializer bitmaps = (TypeSerializer) Class.forName("org.apache.flink.api.common.typeutils.base.BitmapSerializer").getField("INSTANCE").get(null);
            List<Object> all = bitmaps();
            cs.add(new Case("bitmap", bitmaps, all.subList(0, 10).toArray()));
            cs.add(new Case("bitmap-random", bitmaps, all.subList(10, all.size()).toArray()));
        }
        String scala = "org.apache.flink.api.scala.typeutils.";
        if (present(scala + "OptionSerializer")) {
            // Option[Nothing]: Scala's Nothing has no values, so only None.
            TypeSerializer nothing = (TypeSerializer) construct(scala + "NothingSerializer", new Class<?>[0]);
            cs.add(new Case("scala-option-nothing", (TypeSerializer) construct(scala + "OptionSerializer", new Class<?>[] {TypeSerializer.class}, nothing),
                    scalaNone()));
        }
        if (present("org.apache.flink.api.common.typeutils.TypeSerializerConfigSnapshot")) {
            legacyCases(cs, timers, elements, entries, sink);
            TypeSerializer options = (TypeSerializer) construct(scala + "OptionSerializer", new Class<?>[] {TypeSerializer.class}, StringSerializer.INSTANCE);
            cs.add(new Case("legacy-scala-option", options, scalaSome("a"), scalaNone())
                    .snapshot(legacy(scala + "OptionSerializer$OptionSerializerConfigSnapshot", options, StringSerializer.INSTANCE)));
        }
        return cs;
    }

    /**
     * Bitmaps of every container kind RoaringBitmap serializes (array, bitmap and run containers;
     * with fewer than four containers, whose run format has no offsets, and with more), built value
     * by value as Flink's BITMAP functions build them, and by ranges; random ones from a fixed seed.
     */
    static List<Object> bitmaps() throws Exception {
        Class<?> bitmap = Class.forName("org.apache.flink.types.bitmap.Bitmap");
        Method fromArray = bitmap.getMethod("fromArray", int[].class);
        Method addRange = bitmap.getMethod("add", long.class, long.class);
        List<Object> out = new ArrayList<>();
        List<int[]> arrays = new ArrayList<>(Arrays.asList(new int[0], new int[] {1, 2, 3}, new int[] {7}, new int[] {-1, 0, Integer.MIN_VALUE, Integer.MAX_VALUE},
                java.util.stream.IntStream.range(0, 10000).toArray(), java.util.stream.IntStream.range(0, 5000).map(i -> i * 2).toArray(),
                java.util.stream.IntStream.range(0, 300).map(i -> i * 65536 + (i % 7)).toArray()));
        java.util.Random rnd = new java.util.Random(42);
        for (int n = 0; n < 40; n++) {
            int size = rnd.nextInt(n < 30 ? 200 : 3000);
            int span = 1 << (4 + rnd.nextInt(28));
            int base = rnd.nextInt();
            int[] a = new int[size];
            for (int i = 0; i < size; i++) {
                a[i] = rnd.nextInt(4) == 0 ? base + i : base + rnd.nextInt(span);
            }
            arrays.add(a);
        }
        for (int[] a : arrays.subList(0, 7)) {
            out.add(fromArray.invoke(null, (Object) a));
        }
        for (long[] r : new long[][] {{100, 5000}, {65530, 65546}, {4294967000L, 4294967296L}}) {
            Object b = bitmap.getMethod("empty").invoke(null);
            addRange.invoke(b, r[0], r[1]);
            out.add(b);
        }
        for (int[] a : arrays.subList(7, arrays.size())) {
            out.add(fromArray.invoke(null, (Object) a));
        }
        return out;
    }

    /** A class of the user's under Java serialization, with a field of its own class. */
    static final class Point implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        final int x;
        final String label;
        final Point next;

        Point(int x, String label, Point next) {
            this.x = x;
            this.label = label;
            this.next = next;
        }
    }

    static java.util.HashMap<String, Integer> hashMapOf(String k, int v) {
        java.util.HashMap<String, Integer> m = new java.util.HashMap<>();
        m.put(k, v);
        return m;
    }

    /** The JSON of a value under JavaSerializer: see the javaserial family's doc. */
    static Object javaJson(Object v) throws Exception {
        if (v == null || v instanceof String || v instanceof Boolean || v instanceof Long) {
            return v;
        }
        if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        if (v instanceof Double || v instanceof Float) {
            return new Json.Num(Double.toString(((Number) v).doubleValue()));
        }
        if (v instanceof Character) {
            return String.valueOf(v);
        }
        TreeMap<String, Object> o = Json.obj();
        if (v instanceof Enum) {
            o.put("@class", ((Enum<?>) v).getDeclaringClass().getName());
            o.put("@enum", ((Enum<?>) v).name());
            return o;
        }
        if (v instanceof Class) {
            o.put("@class", "java.lang.Class");
            o.put("name", ((Class<?>) v).getName());
            return o;
        }
        if (v instanceof byte[]) {
            return Json.hex((byte[]) v);
        }
        if (v.getClass().isArray()) {
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < java.lang.reflect.Array.getLength(v); i++) {
                out.add(javaJson(java.lang.reflect.Array.get(v, i)));
            }
            return out;
        }
        o.put("@class", v.getClass().getName());
        if (v instanceof Point) {
            // Its serialized fields, as ObjectStreamClass lists them.
            for (java.io.ObjectStreamField f : java.io.ObjectStreamClass.lookup(Point.class).getFields()) {
                o.put(f.getName(), javaJson(field(v, f.getName())));
            }
        } else if (v instanceof ArrayList) {
            // ArrayList's writeObject: the field size, then the size again as block data, then each element.
            List<?> l = (List<?>) v;
            o.put("size", (long) l.size());
            List<Object> data = new ArrayList<>();
            data.add(Json.hex(java.nio.ByteBuffer.allocate(4).putInt(l.size()).array()));
            for (Object e : l) {
                data.add(javaJson(e));
            }
            o.put("@data", data);
        } else if (v instanceof java.util.HashMap) {
            // HashMap's writeObject: the fields loadFactor and threshold (0.75 and 12 for the default
            // table holding one entry), then its buckets (16) and size as block data, then each key and value.
            java.util.Map<?, ?> m = (java.util.Map<?, ?>) v;
            o.put("loadFactor", new Json.Num("0.75"));
            o.put("threshold", 12L);
            List<Object> data = new ArrayList<>();
            data.add(Json.hex(java.nio.ByteBuffer.allocate(8).putInt(16).putInt(m.size()).array()));
            for (java.util.Map.Entry<?, ?> e : m.entrySet()) {
                data.add(javaJson(e.getKey()));
                data.add(javaJson(e.getValue()));
            }
            o.put("@data", data);
        } else {
            throw new IllegalArgumentException("no JSON for " + v.getClass());
        }
        return o;
    }

    /** Variants of every type Flink's VariantBuilder makes, objects and arrays small and large. */
    static List<Object> variants() throws Exception {
        Object b = Class.forName("org.apache.flink.types.variant.Variant").getMethod("newBuilder").invoke(null);
        Class<?> builder = Class.forName("org.apache.flink.types.variant.VariantBuilder");
        Class<?> variant = Class.forName("org.apache.flink.types.variant.Variant");
        java.util.function.BiFunction<Class<?>, Object, Object> of = (type, v) -> {
            try {
                return builder.getMethod("of", type).invoke(b, v);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        };
        List<Object> out = new ArrayList<>(Arrays.asList(builder.getMethod("ofNull").invoke(b), of.apply(boolean.class, true), of.apply(boolean.class, false),
                of.apply(byte.class, (byte) -3), of.apply(short.class, (short) 300), of.apply(int.class, 70000), of.apply(long.class, 1L << 40),
                of.apply(long.class, Long.MIN_VALUE), of.apply(double.class, 1.5), of.apply(double.class, 1e10), of.apply(double.class, -2.5e-310),
                of.apply(float.class, 0.1f), of.apply(String.class, "short \u00e9"), of.apply(String.class, "x".repeat(100)),
                of.apply(byte[].class, new byte[] {1, 2, (byte) 255}), of.apply(java.math.BigDecimal.class, new java.math.BigDecimal("123.4500")),
                of.apply(java.math.BigDecimal.class, new java.math.BigDecimal("-0.001")),
                of.apply(java.math.BigDecimal.class, new java.math.BigDecimal("12345678901234567890.12")),
                of.apply(java.math.BigDecimal.class, new java.math.BigDecimal("-98765432109876543210987654321.123456789")),
                of.apply(java.time.Instant.class, java.time.Instant.ofEpochMilli(1700000000123L)),
                of.apply(java.time.LocalDate.class, java.time.LocalDate.of(2024, 2, 29)), of.apply(java.time.LocalDate.class, java.time.LocalDate.of(-5, 1, 1)),
                of.apply(java.time.LocalDateTime.class, java.time.LocalDateTime.of(1969, 12, 31, 23, 59, 59, 500_000_000)),
                of.apply(java.time.LocalDateTime.class, java.time.LocalDateTime.of(2024, 1, 2, 3, 4, 0))));
        Method object = builder.getMethod("object");
        Method array = builder.getMethod("array");
        Class<?> objectBuilder = Class.forName("org.apache.flink.types.variant.VariantBuilder$VariantObjectBuilder");
        Class<?> arrayBuilder = Class.forName("org.apache.flink.types.variant.VariantBuilder$VariantArrayBuilder");
        Method put = objectBuilder.getMethod("add", String.class, variant);
        Method append = arrayBuilder.getMethod("add", variant);
        Object inner = array.invoke(b);
        append.invoke(inner, of.apply(String.class, "x"));
        append.invoke(inner, builder.getMethod("ofNull").invoke(b));
        Object nested = object.invoke(b);
        put.invoke(nested, "k", of.apply(double.class, 2.5));
        Object o = object.invoke(b);
        put.invoke(o, "b", of.apply(int.class, 1));
        put.invoke(o, "a", arrayBuilder.getMethod("build").invoke(inner));
        put.invoke(o, "nested", objectBuilder.getMethod("build").invoke(nested));
        out.add(objectBuilder.getMethod("build").invoke(o));
        Object wide = object.invoke(b);
        Object long_ = array.invoke(b);
        for (int i = 0; i < 300; i++) {
            put.invoke(wide, "key" + i, of.apply(String.class, "v".repeat(i % 70)));
            append.invoke(long_, of.apply(long.class, (long) i * 1000003));
        }
        out.add(objectBuilder.getMethod("build").invoke(wide));
        out.add(arrayBuilder.getMethod("build").invoke(long_));
        return out;
    }

    static Object scalaSome(Object v) throws Exception {
        return Class.forName("scala.Option").getMethod("apply", Object.class).invoke(null, v);
    }

    static Object scalaNone() throws Exception {
        return Class.forName("scala.None$").getField("MODULE$").get(null);
    }

    /**
     * Flink 1.15 and 1.16 still read (and write back, for a state restored but not registered
     * again) the config snapshots of Flink 1.6 and before: the snapshot class, the adapter version
     * 0x7a53c4f0, the Java-serialized serializer, then the config's own version and content (a
     * composite's nested serializers and configs "with resilience"). These cases write such
     * snapshots, with the serializer they stand for, as Flink writes them.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void legacyCases(List<Case> cs, TypeSerializer timers, List<Object> elements, TypeSerializer entries, String sink) throws Exception {
        cs.add(new Case("legacy-timer", timers, timer(1700000000000L, "k", VoidNamespace.INSTANCE), timer(-5L, "", VoidNamespace.INSTANCE))
                .snapshot(legacy("org.apache.flink.streaming.api.operators.TimerSerializer$TimerSerializerConfigSnapshot", timers,
                        StringSerializer.INSTANCE, VoidNamespaceSerializer.INSTANCE)));
        TypeSerializer streamElements = streamElements(StringSerializer.INSTANCE);
        cs.add(new Case("legacy-streamelement", streamElements, elements.toArray())
                .snapshot(legacy("org.apache.flink.streaming.runtime.streamrecord.StreamElementSerializer$StreamElementSerializerConfigSnapshot",
                        streamElements, StringSerializer.INSTANCE)));
        cs.add(new Case("legacy-bufferentry", entries, bufferEntry("left", true), bufferEntry(null, false))
                .snapshot(legacy("org.apache.flink.streaming.api.operators.co.IntervalJoinOperator$BufferSerializerConfigSnapshot", entries,
                        StringSerializer.INSTANCE)));
        for (boolean nullable : new boolean[] {false, true}) {
            TypeSerializer states = (TypeSerializer) construct(sink + "StateSerializer", new Class<?>[] {TypeSerializer.class, TypeSerializer.class, boolean.class},
                    StringSerializer.INSTANCE, LongSerializer.INSTANCE, nullable);
            Case c = new Case("legacy-twophase-state" + (nullable ? "-nullable" : ""), states,
                    sinkState(sink, holder(sink, "txn-1", 1700000000000L), List.of(holder(sink, "txn-0", 1699999999000L)), Optional.of(42L)))
                    .snapshot(legacy(sink + "StateSerializerConfigSnapshot", states, StringSerializer.INSTANCE, LongSerializer.INSTANCE));
            if (nullable) {
                c.values.add(sinkState(sink, null, List.of(), Optional.empty()));
            }
            cs.add(c);
        }
        TypeSerializer lists = new ListSerializer<>(LongSerializer.INSTANCE);
        cs.add(new Case("legacy-list", lists, Arrays.asList(1L, -2L), new ArrayList<Long>())
                .snapshot(legacy("org.apache.flink.api.common.typeutils.base.CollectionSerializerConfigSnapshot", lists, LongSerializer.INSTANCE)));
        TypeSerializer longs = LongSerializer.INSTANCE;
        TypeSerializerSnapshot parameterless = (TypeSerializerSnapshot) construct("org.apache.flink.api.common.typeutils.ParameterlessTypeSerializerConfig",
                new Class<?>[] {String.class}, LongSerializer.class.getCanonicalName());
        cs.add(new Case("legacy-parameterless-long", longs, 7L, Long.MIN_VALUE).snapshot(prior(parameterless, longs)));
        TypeSerializer values = new ValueSerializer<>(StringValue.class);
        cs.add(new Case("legacy-value", values, new StringValue("xyz")).snapshot(prior((TypeSerializerSnapshot) construct(
                "org.apache.flink.api.java.typeutils.runtime.ValueSerializer$ValueSerializerConfigSnapshot", new Class<?>[] {Class.class}, StringValue.class), values)));
        TypeSerializer copyables = new CopyableValueSerializer<>(IntValue.class);
        cs.add(new Case("legacy-copyablevalue", copyables, new IntValue(7)).snapshot(prior((TypeSerializerSnapshot) construct(
                "org.apache.flink.api.java.typeutils.runtime.CopyableValueSerializer$CopyableValueSerializerConfigSnapshot", new Class<?>[] {Class.class}, IntValue.class), copyables)));
        TypeSerializer maps = new MapSerializer<>(StringSerializer.INSTANCE, LongSerializer.INSTANCE);
        java.util.Map<String, Long> m = new java.util.LinkedHashMap<>();
        m.put("a", 1L);
        m.put("b", null);
        cs.add(new Case("legacy-map", maps, m).snapshot(legacy("org.apache.flink.api.common.typeutils.base.MapSerializerConfigSnapshot", maps,
                StringSerializer.INSTANCE, LongSerializer.INSTANCE)));
        TypeSerializer eithers = new EitherSerializer<>(StringSerializer.INSTANCE, LongSerializer.INSTANCE);
        cs.add(new Case("legacy-either", eithers, Either.Left("l"), Either.Right(5L)).snapshot(legacy(
                "org.apache.flink.api.java.typeutils.runtime.EitherSerializerConfigSnapshot", eithers, StringSerializer.INSTANCE, LongSerializer.INSTANCE)));
    }

    /**
     * A legacy composite config snapshot of the class given, standing for serializer, with the
     * nested serializers given (set as Flink's readSnapshot sets them where the class has no
     * constructor taking them).
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static TypeSerializerSnapshot<?> legacy(String className, TypeSerializer<?> serializer, TypeSerializer<?>... nested) throws Exception {
        Class<?> c = Class.forName(className);
        TypeSerializerSnapshot snap = (TypeSerializerSnapshot) c.getConstructor().newInstance();
        List<Object> pairs = new ArrayList<>();
        for (TypeSerializer<?> n : nested) {
            pairs.add(org.apache.flink.api.java.tuple.Tuple2.of(n, n.snapshotConfiguration()));
        }
        Field f = Class.forName("org.apache.flink.api.common.typeutils.CompositeTypeSerializerConfigSnapshot").getDeclaredField("nestedSerializersAndConfigs");
        f.setAccessible(true);
        f.set(snap, pairs);
        return prior(snap, serializer);
    }

    /** A legacy config snapshot with the serializer it stands for, which Flink writes Java-serialized beside it. */
    static TypeSerializerSnapshot<?> prior(TypeSerializerSnapshot<?> snap, TypeSerializer<?> serializer) throws Exception {
        Method set = Class.forName("org.apache.flink.api.common.typeutils.TypeSerializerConfigSnapshot").getMethod("setPriorSerializer", TypeSerializer.class);
        set.invoke(snap, serializer);
        return snap;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static TypeSerializer<?> ttlSerializer(String factory, TypeSerializer<?> user) throws Exception {
        return (TypeSerializer<?>) construct(factory + "TtlStateFactory$TtlSerializer", new Class<?>[] {TypeSerializer.class, TypeSerializer.class},
                LongSerializer.INSTANCE, user);
    }

    static TypeSerializer<?> ttlAware(TypeSerializer<?> s) throws Exception {
        Method wrap = Class.forName("org.apache.flink.runtime.state.ttl.TtlAwareSerializer").getMethod("wrapTtlAwareSerializer", TypeSerializer.class);
        return (TypeSerializer<?>) wrap.invoke(null, s);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static TypeSerializer<?> streamElements(TypeSerializer<?> s) throws Exception {
        return (TypeSerializer<?>) construct("org.apache.flink.streaming.runtime.streamrecord.StreamElementSerializer", new Class<?>[] {TypeSerializer.class}, s);
    }

    static Object timer(long timestamp, Object key, Object namespace) throws Exception {
        return construct("org.apache.flink.streaming.api.operators.TimerHeapInternalTimer", new Class<?>[] {long.class, Object.class, Object.class},
                timestamp, key, namespace);
    }

    static Object bufferEntry(Object element, boolean joined) throws Exception {
        return construct("org.apache.flink.streaming.api.operators.co.IntervalJoinOperator$BufferEntry", new Class<?>[] {Object.class, boolean.class},
                element, joined);
    }

    static Object holder(String sink, Object handle, long start) throws Exception {
        return construct(sink + "TransactionHolder", new Class<?>[] {Object.class, long.class}, handle, start);
    }

    static Object sinkState(String sink, Object pending, List<Object> pendingCommits, Optional<?> context) throws Exception {
        return construct(sink + "State", new Class<?>[] {Class.forName(sink + "TransactionHolder"), List.class, Optional.class},
                pending, new ArrayList<>(pendingCommits), context);
    }

    /** The JSON that stands for a value of the serializers above, worked out from the Java value. */
    @SuppressWarnings("rawtypes")
    static Object json(Object v) throws Exception {
        if (v == null || v instanceof String || v instanceof Long || v instanceof Boolean || v == VoidNamespace.INSTANCE) {
            return v == VoidNamespace.INSTANCE ? null : v;
        }
        if (v instanceof Integer) {
            return (long) (Integer) v;
        }
        if (v instanceof Value) {
            return CoreValueVectors.json(v);
        }
        if (v.getClass().getName().equals("org.apache.flink.types.bitmap.RoaringBitmapData")) {
            List<Object> out = new ArrayList<>();
            for (int x : (int[]) call(v, "toArray")) {
                out.add((long) x);
            }
            return out;
        }
        if (v.getClass().getName().equals("org.apache.flink.types.variant.BinaryVariant")) {
            // As Flink shows it: its toJson, kept as its text.
            return new Json.Num((String) call(v, "toJson"));
        }
        if (v.getClass().getName().equals("scala.None$")) {
            return null;
        }
        if (v.getClass().getName().equals("scala.Some")) {
            return json(call(v, "get"));
        }
        if (v instanceof Either) {
            TreeMap<String, Object> o = Json.obj();
            Either<?, ?> e = (Either<?, ?>) v;
            o.put(e.isLeft() ? "left" : "right", json(e.isLeft() ? e.left() : e.right()));
            return o;
        }
        if (v instanceof java.util.Map) {
            TreeMap<String, Object> o = Json.obj();
            for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) {
                o.put((String) e.getKey(), json(e.getValue()));
            }
            return o;
        }
        if (v instanceof Object[]) {
            List<Object> out = new ArrayList<>();
            for (Object e : (Object[]) v) {
                out.add(json(e));
            }
            return out;
        }
        if (v instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object e : (List<?>) v) {
                out.add(json(e));
            }
            return out;
        }
        TreeMap<String, Object> o = Json.obj();
        String cls = v.getClass().getName();
        if (v instanceof TimeWindow) {
            o.put("start", ((TimeWindow) v).getStart());
            o.put("end", ((TimeWindow) v).getEnd());
        } else if (v instanceof TtlValue) {
            o.put("last_access", ((TtlValue) v).getLastAccessTimestamp());
            o.put("value", json(((TtlValue) v).getUserValue()));
        } else if (cls.endsWith(".TimerHeapInternalTimer")) {
            o.put("timestamp", call(v, "getTimestamp"));
            o.put("key", json(call(v, "getKey")));
            o.put("namespace", json(call(v, "getNamespace")));
        } else if (cls.endsWith("IntervalJoinOperator$BufferEntry")) {
            o.put("element", json(field(v, "element")));
            o.put("hasBeenJoined", field(v, "hasBeenJoined"));
        } else if (cls.endsWith("TwoPhaseCommitSinkFunction$State")) {
            Object pending = call(v, "getPendingTransaction");
            o.put("pendingTransaction", pending == null ? null : json(pending));
            o.put("pendingCommitTransactions", json(call(v, "getPendingCommitTransactions")));
            Optional<?> context = (Optional<?>) call(v, "getContext");
            o.put("context", context.isPresent() ? json(context.get()) : null);
        } else if (cls.endsWith("TwoPhaseCommitSinkFunction$TransactionHolder")) {
            o.put("handle", json(field(v, "handle")));
            o.put("transactionStartTime", field(v, "transactionStartTime"));
        } else if (v instanceof StreamElement) {
            return streamElement((StreamElement) v);
        } else {
            throw new IllegalArgumentException("no JSON for " + cls);
        }
        return o;
    }

    /** A stream element: one key naming its kind, holding its fields as Flink's classes name them. */
    static Object streamElement(StreamElement e) throws Exception {
        TreeMap<String, Object> fields = Json.obj();
        String kind;
        if (e.isRecord()) {
            kind = "record";
            StreamRecord<?> r = e.asRecord();
            fields.put("value", json(r.getValue()));
            if (r.hasTimestamp()) {
                fields.put("timestamp", r.getTimestamp());
            }
        } else if (e.isWatermark()) {
            Watermark w = e.asWatermark();
            fields.put("timestamp", w.getTimestamp());
            kind = "watermark";
            if (w.getClass().getName().endsWith(".InternalWatermark")) {
                kind = "internalWatermark";
                fields.put("subpartitionIndex", (long) (Integer) call(w, "getSubpartitionIndex"));
            }
        } else if (e.isWatermarkStatus()) {
            kind = "watermarkStatus";
            fields.put("status", e.asWatermarkStatus().isIdle() ? "IDLE" : "ACTIVE");
        } else if (e.isLatencyMarker()) {
            kind = "latencyMarker";
            LatencyMarker m = e.asLatencyMarker();
            fields.put("markedTime", m.getMarkedTime());
            fields.put("operatorId", m.getOperatorId().toHexString());
            fields.put("subtaskIndex", (long) m.getSubtaskIndex());
        } else if (e.getClass().getName().endsWith(".RecordAttributes")) {
            kind = "recordAttributes";
            fields.put("backlog", call(e, "isBacklog"));
        } else {
            throw new IllegalArgumentException("no JSON for " + e.getClass());
        }
        TreeMap<String, Object> o = Json.obj();
        o.put(kind, fields);
        return o;
    }

    static boolean present(String className) {
        return TableSerializerVectors.present(className);
    }

    static Object construct(String className, Class<?>[] params, Object... args) throws Exception {
        return TableSerializerVectors.construct(className, params, args);
    }

    static Object call(Object o, String method) throws Exception {
        Method m = o.getClass().getMethod(method);
        m.setAccessible(true);
        return m.invoke(o);
    }

    static Object field(Object o, String name) throws Exception {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // a superclass's
            }
        }
        throw new NoSuchFieldException(name + " of " + o.getClass());
    }

    /** One vector: the serializer's snapshot, and each value serialized with its JSON. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static String line(Case c) throws Exception {
        DataOutputSerializer snap = new DataOutputSerializer(256);
        if (c.snapshot == null) {
            CoreValueVectors.writeSnapshot(snap, c.serializer);
        } else {
            Class<?> util = Class.forName("org.apache.flink.api.common.typeutils.TypeSerializerSnapshotSerializationUtil");
            util.getMethod("writeSerializerSnapshot", org.apache.flink.core.memory.DataOutputView.class, TypeSerializerSnapshot.class, TypeSerializer.class)
                    .invoke(null, snap, c.snapshot, c.serializer);
        }
        List<Object> values = new ArrayList<>();
        for (Object v : c.values) {
            DataOutputSerializer out = new DataOutputSerializer(64);
            ((TypeSerializer) c.serializer).serialize(v, out);
            TreeMap<String, Object> o = Json.obj();
            o.put("bytes", Json.hex(out.getCopyOfBuffer()));
            o.put("json", c.serializer.getClass().getName().endsWith(".JavaSerializer") ? javaJson(v) : json(v));
            values.add(o);
        }
        TreeMap<String, Object> o = Json.obj();
        o.put("name", c.name);
        o.put("serializer", c.serializer.getClass().getName());
        o.put("snapshot", Json.hex(snap.getCopyOfBuffer()));
        o.put("values", values);
        return Json.render(o);
    }
}
