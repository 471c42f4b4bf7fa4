package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.typeutils.EitherTypeInfo;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.formats.avro.typeutils.GenericRecordAvroTypeInfo;
import org.apache.flink.types.Either;
import org.apache.flink.types.Row;

import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * One ValueState per kind of value Flink serializes differently, all on String keys
 * "obj-&lt;r % keys&gt;"; each record overwrites them with values derived from its number r.
 * Scala types are left out (flink-scala is gone in Flink 2).
 */
public final class TypesJob extends StringKeyedJob {
    /** A Flink POJO (public fields, no-arg constructor): PojoSerializer. */
    public static final class Person {
        public String name;
        public int age;
        public double score;
        public boolean active;
        public Long id;

        public Person() {}
    }

    public enum Color { RED, GREEN, BLUE }

    /** Not a POJO (no no-arg constructor, private final fields): Flink falls back to Kryo. */
    public static final class Opaque {
        private final long id;
        private final String label;

        public Opaque(long id, String label) {
            this.id = id;
            this.label = label;
        }

        @Override
        public String toString() {
            return "Opaque{id=" + id + ", label=" + label + "}";
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Opaque && ((Opaque) o).id == id && Objects.equals(((Opaque) o).label, label);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(id);
        }
    }

    static final String AVRO_SCHEMA = "{\"type\":\"record\",\"name\":\"Event\",\"namespace\":\"stateutil.flink\",\"fields\":["
            + "{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"name\",\"type\":\"string\"},"
            + "{\"name\":\"score\",\"type\":\"double\"},{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"items\":\"string\"}},"
            + "{\"name\":\"note\",\"type\":[\"null\",\"string\"],\"default\":null}]}";

    private static transient Schema schema;

    static Schema schema() {
        if (schema == null) {
            schema = new Schema.Parser().parse(AVRO_SCHEMA);
        }
        return schema;
    }

    public TypesJob() {
        super("obj");
    }

    @Override
    public String name() {
        return "types";
    }

    @Override
    List<StateDef> states() {
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.value("pojo", Types.POJO(Person.class)));
        s.add(StateDef.value("avro", new GenericRecordAvroTypeInfo(schema())));
        s.add(StateDef.value("row", Types.ROW_NAMED(new String[] {"id", "label", "ratio"}, Types.LONG, Types.STRING, Types.DOUBLE)));
        s.add(StateDef.value("tuple3", Types.TUPLE(Types.STRING, Types.LONG, Types.DOUBLE)));
        s.add(StateDef.value("either", new EitherTypeInfo<>(Types.STRING, Types.LONG)));
        s.add(StateDef.value("enum", Types.ENUM(Color.class)));
        s.add(StateDef.value("list", Types.LIST(Types.LONG)));
        s.add(StateDef.value("map", Types.MAP(Types.STRING, Types.INT)));
        s.add(StateDef.value("ints", Types.PRIMITIVE_ARRAY(Types.INT)));
        s.add(StateDef.value("strings", Types.OBJECT_ARRAY(Types.STRING)));
        s.add(StateDef.value("bytes", Types.PRIMITIVE_ARRAY(Types.BYTE)));
        s.add(StateDef.value("kryo", new GenericTypeInfo<>(Opaque.class)));
        s.add(StateDef.value("double", Types.DOUBLE));
        s.add(StateDef.value("float", Types.FLOAT));
        s.add(StateDef.value("int", Types.INT));
        s.add(StateDef.value("short", Types.SHORT));
        s.add(StateDef.value("byte", Types.BYTE));
        s.add(StateDef.value("boolean", Types.BOOLEAN));
        s.add(StateDef.value("char", Types.CHAR));
        s.add(StateDef.value("string", Types.STRING));
        return s;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        Person person = new Person();
        person.name = "person-" + r;
        person.age = (int) (r % 90);
        person.score = r / 8.0;
        person.active = r % 2 == 0;
        person.id = r % 3 == 0 ? null : r;
        GenericRecord avro = new GenericData.Record(schema());
        avro.put("id", r);
        avro.put("name", "event-" + r);
        avro.put("score", r * 0.25);
        avro.put("tags", new GenericData.Array<>(schema().getField("tags").schema(), List.of("t" + (r % 3), "u" + (r % 5))));
        avro.put("note", r % 2 == 0 ? null : "odd " + r);
        Map<String, Integer> map = new LinkedHashMap<>();
        map.put("a", (int) r);
        map.put("b", (int) (r * 2));
        Object[] values = {
            person,
            avro,
            Row.of(r, "row-" + r, r / 3.0),
            Tuple3.of("t-" + r, r, r * 1.5),
            r % 2 == 0 ? Either.Left("left-" + r) : Either.Right(r),
            Color.values()[(int) (r % 3)],
            new ArrayList<>(List.of(r, r + 1, -r)),
            map,
            new int[] {(int) r, (int) (r % 7), -1},
            new String[] {"s" + r, "", "é€😀"},
            new byte[] {(byte) r, (byte) 0xff, 0},
            new Opaque(r, "label-" + r),
            r + 0.1,
            (float) r / 4,
            (int) (r * 1000),
            (short) (r % 30000),
            (byte) (r % 100),
            r % 2 == 1,
            (char) ('A' + r % 26),
            "str-\"" + r + "\"\n",
        };
        for (int i = 0; i < values.length; i++) {
            ((ValueState) s.get(i)).update(values[i]);
        }
    }
}
