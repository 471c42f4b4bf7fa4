package stateutil.flink.jobs;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.EitherTypeInfo;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.types.Either;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.google.protobuf.ByteString;
import com.google.protobuf.DescriptorProtos;

import stateutil.flink.Compat;
import stateutil.flink.Dumps;
import stateutil.flink.Params;
import stateutil.flink.RestoredStateDumper2;
import stateutil.flink.proto.Measurement;
import stateutil.flink.proto.Probe;

/**
 * A DataStream job whose keyed state (operator "zoo", String keys "z-&lt;r % keys&gt;") holds
 * one state for each kind of value Flink serializes its own way: a Java record (the POJO
 * serializer, 1.19 on), a POJO with a nested POJO, a Map&lt;String, List&lt;POJO&gt;&gt;, a
 * List&lt;POJO&gt;, an int[] and an enum; Optional (Kryo); BigDecimal; BigInteger; Instant;
 * LocalDateTime, LocalDate, LocalTime; java.sql.Timestamp; Either&lt;Long, POJO&gt;; Row with
 * RowKind UPDATE_AFTER (odd records) and INSERT; long[] and POJO[]; an enum; a class Kryo
 * writes with its FieldSerializer; a class with a Kryo serializer of the job's own; a
 * Protobuf message through chill-protobuf's ProtobufSerializer; a ListState of POJOs, a
 * MapState of records; an event-time timer per record (r + 60 s; the watermark fires the
 * early ones) and a processing-time timer in 2100. Operator "rules": a broadcast state of Row
 * values (some UPDATE_AFTER) from a source of 8 rules. Outputs: a line per record and per
 * timer that fires.
 */
public final class ZooJob extends Witness {
    static final String UID = "zoo", RULES = "rules";

    public ZooJob() {
        super("z");
    }

    @Override
    public String name() {
        return "zoo";
    }

    @Override
    List<String> keyedUids() {
        return List.of(UID);
    }

    public enum Level { LOW, MEDIUM, HIGH }

    /** A Java record: Flink's POJO serializer (1.19 on). */
    public record Sample(String name, long n, double ratio, Level level) {}

    /** A POJO nested in {@link Outer}. */
    public static final class Inner {
        public String label;
        public int weight;

        public Inner() {}

        Inner(String label, int weight) {
            this.label = label;
            this.weight = weight;
        }
    }

    /** A POJO with a nested POJO, collections of POJOs, an array and an enum. */
    public static final class Outer {
        public String id;
        public Inner inner;
        public Map<String, List<Inner>> groups;
        public List<Inner> items;
        public int[] counts;
        public Level level;

        public Outer() {}
    }

    /** Not a POJO (final fields, no no-arg constructor): Kryo's FieldSerializer. */
    public static final class Gadget {
        private final String name;
        private final long[] values;
        private final Map<String, Integer> attrs;

        Gadget(String name, long[] values, Map<String, Integer> attrs) {
            this.name = name;
            this.values = values;
            this.attrs = attrs;
        }
    }

    /** A class with a Kryo serializer of the job's own ({@link TokenSerializer}). */
    public static final class Token {
        final long id;
        final String text;

        Token(long id, String text) {
            this.id = id;
            this.text = text;
        }
    }

    /** Writes a Token as its id (a varint) and its text. */
    public static final class TokenSerializer extends com.esotericsoftware.kryo.Serializer<Token> implements java.io.Serializable {
        private static final long serialVersionUID = 1L;

        @Override
        public void write(Kryo kryo, Output out, Token t) {
            out.writeVarLong(t.id, true);
            out.writeString(t.text);
        }

        @Override
        @SuppressWarnings({"rawtypes", "unchecked"})
        public Token read(Kryo kryo, Input in, Class type) {
            return new Token(in.readVarLong(true), in.readString());
        }
    }

    static final RowTypeInfo ROW = new RowTypeInfo(new TypeInformation<?>[] {Types.LONG, Types.STRING, Types.BIG_DEC, Types.INSTANT},
            new String[] {"id", "label", "amount", "at"});
    static final RowTypeInfo RULE = new RowTypeInfo(new TypeInformation<?>[] {Types.STRING, Types.LONG, Types.BIG_DEC},
            new String[] {"name", "threshold", "weight"});

    static MapStateDescriptor<String, Row> rules() {
        return new MapStateDescriptor<>("rules", Types.STRING, RULE);
    }

    /** The FileDescriptorSet of the job's Protobuf messages, as protoc --descriptor_set_out writes it. */
    public static byte[] protoDescriptors() {
        return DescriptorProtos.FileDescriptorSet.newBuilder().addFile(Measurement.getDescriptor().getFile().toProto()).build().toByteArray();
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        Compat.registerKryo(env, Token.class, TokenSerializer.class);
        Compat.registerKryo(env, Measurement.class, com.twitter.chill.protobuf.ProtobufSerializer.class);
        DataStream<Long> src = source(env, p);
        src.keyBy(new Key(prefix, keys(p)), Types.STRING).process(new Zoo(), Types.STRING).uid(UID).name(UID)
                .map(new Out()).uid("out-" + UID).name("out-" + UID);
        src.connect(ruleSource(env).broadcast(rules())).process(new Rules(), Types.STRING).uid(RULES).name(RULES);
    }

    static DataStream<Row> ruleSource(StreamExecutionEnvironment env) {
        return Jobs.source(env, "rules-source", 8, 1).setParallelism(1)
                .map(new ToRule()).uid("to-rule").name("to-rule").setParallelism(1).returns(RULE);
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    void extraDumpView(StreamExecutionEnvironment env, Params p, DataStream<Long> src) throws Exception {
        src.connect(ruleSource(env).broadcast())
                .transform(RULES, Types.LONG, (org.apache.flink.streaming.api.operators.TwoInputStreamOperator) new RestoredStateDumper2<String>(RULES)).uid(RULES);
    }

    static final class ToRule implements MapFunction<Long, Row> {
        @Override
        public Row map(Long rec) {
            long r = rec;
            Row row = Row.withPositions(r % 2 == 0 ? RowKind.INSERT : RowKind.UPDATE_AFTER, 3);
            row.setField(0, "rule-" + r);
            row.setField(1, 10 * r);
            row.setField(2, BigDecimal.valueOf(r * 125, 2));
            return row;
        }
    }

    static final class Rules extends BroadcastProcessFunction<Long, Row, String> {
        @Override
        public void processElement(Long r, ReadOnlyContext ctx, Collector<String> out) {}

        @Override
        public void processBroadcastElement(Row rule, Context ctx, Collector<String> out) throws Exception {
            BroadcastState<String, Row> s = ctx.getBroadcastState(rules());
            s.put((String) rule.getField(0), rule);
        }
    }

    static final class Out implements MapFunction<String, String> {
        @Override
        public String map(String s) {
            Dumps.output(1, s);
            return s;
        }
    }

    /** Every state of the job, overwritten (or appended to) by each record. */
    static final class Zoo extends KeyedProcessFunction<String, Long, String> {
        private transient List<ValueState<Object>> values;
        private transient ListState<Inner> events;
        private transient MapState<String, Sample> index;

        @SuppressWarnings({"unchecked", "rawtypes"})
        private void init() {
            values = new ArrayList<>();
            Object[][] defs = {
                {"record", Types.POJO(Sample.class)},
                {"nested", Types.POJO(Outer.class)},
                {"optional", new GenericTypeInfo<>(Optional.class)},
                {"decimal", Types.BIG_DEC},
                {"bigint", Types.BIG_INT},
                {"instant", Types.INSTANT},
                {"datetime", Types.LOCAL_DATE_TIME},
                {"date", Types.LOCAL_DATE},
                {"time", Types.LOCAL_TIME},
                {"timestamp", Types.SQL_TIMESTAMP},
                {"either", new EitherTypeInfo<>(Types.LONG, Types.POJO(Inner.class))},
                {"row", ROW},
                {"longs", Types.PRIMITIVE_ARRAY(Types.LONG)},
                {"inners", Types.OBJECT_ARRAY(Types.POJO(Inner.class))},
                {"level", Types.ENUM(Level.class)},
                {"kryo", new GenericTypeInfo<>(Gadget.class)},
                {"custom", new GenericTypeInfo<>(Token.class)},
                {"proto", new GenericTypeInfo<>(Measurement.class)},
            };
            for (Object[] d : defs) {
                values.add(getRuntimeContext().getState(new ValueStateDescriptor<>((String) d[0], (TypeInformation) d[1])));
            }
            events = getRuntimeContext().getListState(new ListStateDescriptor<>("events", Types.POJO(Inner.class)));
            index = getRuntimeContext().getMapState(new MapStateDescriptor<>("index", Types.STRING, Types.POJO(Sample.class)));
        }

        @Override
        public void processElement(Long rec, Context ctx, Collector<String> out) throws Exception {
            long r = rec;
            if (values == null) {
                init();
            }
            Level level = Level.values()[(int) (r % 3)];
            Outer o = new Outer();
            o.id = "outer-" + r;
            o.inner = new Inner("in-" + r, (int) (r % 11));
            o.groups = new HashMap<>();
            o.groups.put("g" + (r % 2), new ArrayList<>(List.of(new Inner("a" + r, 1), new Inner("b" + r, 2))));
            o.groups.put("empty", new ArrayList<>());
            o.items = new ArrayList<>(List.of(new Inner("i" + r, (int) r)));
            o.counts = new int[] {(int) r, -1, 0};
            o.level = level;
            Map<String, Integer> attrs = new LinkedHashMap<>();
            attrs.put("r", (int) r);
            Instant at = Instant.ofEpochSecond(1_700_000_000L + r, r * 1_000_003 % 1_000_000_000);
            Row row = Row.withPositions(r % 2 == 1 ? RowKind.UPDATE_AFTER : RowKind.INSERT, 4);
            row.setField(0, r);
            row.setField(1, r % 5 == 0 ? null : "row-" + r);
            row.setField(2, new BigDecimal(BigInteger.valueOf(r * 1001 - 7), 3));
            row.setField(3, at);
            Measurement.Builder m = Measurement.newBuilder().setId(r).setSensor("sensor-" + (r % 4)).setValue(r / 4.0)
                    .setUnit(r % 2 == 0 ? stateutil.flink.proto.Unit.CELSIUS : stateutil.flink.proto.Unit.KELVIN)
                    .setValid(r % 3 != 0).setRaw(ByteString.copyFrom(new byte[] {(byte) r, 0, (byte) 0xff}))
                    .setProbe(Probe.newBuilder().setName("p" + r).addSamples(r).addSamples(-r).build())
                    .addTags("t" + (r % 3)).putCounts("c", (int) r);
            if (r % 2 == 0) {
                m.setNote("even " + r);
            }
            Object[] vs = {
                new Sample("sample-" + r, r, r / 3.0, level),
                o,
                r % 4 == 0 ? Optional.empty() : Optional.of("opt-" + r),
                new BigDecimal(BigInteger.valueOf(r * 123_456_789L - 5), (int) (r % 7)),
                BigInteger.valueOf(r).pow(5).negate().add(BigInteger.ONE.shiftLeft(70)),
                at,
                LocalDateTime.ofEpochSecond(1_600_000_000L + r * 3600, (int) (r * 7), ZoneOffset.UTC),
                LocalDate.ofEpochDay(18_000 + r),
                LocalTime.ofNanoOfDay(r * 1_000_000_007L % 86_400_000_000_000L),
                new java.sql.Timestamp(1_650_000_000_000L + r),
                r % 2 == 0 ? Either.Left(r) : Either.Right(new Inner("right-" + r, (int) r)),
                row,
                new long[] {r, r * r, -r},
                new Inner[] {new Inner("x" + r, 1), null, new Inner("y" + r, 2)},
                level,
                new Gadget("gadget-" + r, new long[] {r, 2 * r}, attrs),
                new Token(r * 7, "token-" + r),
                m.build(),
            };
            for (int i = 0; i < vs.length; i++) {
                values.get(i).update(vs[i]);
            }
            events.add(new Inner("event-" + r, (int) (r % 13)));
            index.put("s" + r, new Sample("indexed-" + r, r, 0.5, level));
            ctx.timerService().registerEventTimeTimer(r * 1000 + 60_000);
            ctx.timerService().registerProcessingTimeTimer(4_102_444_800_000L);
            out.collect("record " + ctx.getCurrentKey() + " " + r);
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<String> out) {
            out.collect("timer " + ctx.getCurrentKey() + " " + ts + " " + ctx.timeDomain());
        }
    }
}
