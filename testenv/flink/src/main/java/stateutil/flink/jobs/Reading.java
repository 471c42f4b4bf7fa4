package stateutil.flink.jobs;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

import org.apache.avro.Schema;
import org.apache.avro.specific.SpecificRecordBase;

/**
 * A SpecificRecord written by hand as avro-tools would generate it (the schema in SCHEMA$,
 * positional get and put), with public fields so that Flink's AvroTypeInfo sees a POJO. Its
 * nested record, enum and fixed have no classes, so Avro reads them as generic data.
 */
public final class Reading extends SpecificRecordBase {
    public static final Schema SCHEMA$ = new Schema.Parser().parse("{\"type\":\"record\",\"name\":\"Reading\","
            + "\"namespace\":\"stateutil.flink.jobs\",\"fields\":["
            + "{\"name\":\"id\",\"type\":\"long\"},"
            + "{\"name\":\"sensor\",\"type\":{\"type\":\"record\",\"name\":\"Sensor\",\"namespace\":\"stateutil.flink.avro\",\"fields\":["
            + "{\"name\":\"name\",\"type\":\"string\"},"
            + "{\"name\":\"kind\",\"type\":{\"type\":\"enum\",\"name\":\"Kind\",\"symbols\":[\"TEMP\",\"HUMIDITY\",\"PRESSURE\"]}}]}},"
            + "{\"name\":\"samples\",\"type\":{\"type\":\"array\",\"items\":\"int\"}},"
            + "{\"name\":\"labels\",\"type\":{\"type\":\"map\",\"values\":\"long\"}},"
            + "{\"name\":\"note\",\"type\":[\"null\",\"string\"],\"default\":null},"
            + "{\"name\":\"choice\",\"type\":[\"null\",\"string\",\"long\"],\"default\":null},"
            + "{\"name\":\"amount\",\"type\":{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":12,\"scale\":2}},"
            + "{\"name\":\"price\",\"type\":{\"type\":\"fixed\",\"name\":\"Price\",\"namespace\":\"stateutil.flink.avro\",\"size\":8,"
            + "\"logicalType\":\"decimal\",\"precision\":16,\"scale\":3}},"
            + "{\"name\":\"day\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}},"
            + "{\"name\":\"at\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}},"
            + "{\"name\":\"atMicros\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"
            + "{\"name\":\"time\",\"type\":{\"type\":\"int\",\"logicalType\":\"time-millis\"}},"
            + "{\"name\":\"timeMicros\",\"type\":{\"type\":\"long\",\"logicalType\":\"time-micros\"}},"
            + "{\"name\":\"uid\",\"type\":{\"type\":\"string\",\"logicalType\":\"uuid\"}},"
            + "{\"name\":\"hash\",\"type\":{\"type\":\"fixed\",\"name\":\"Hash\",\"namespace\":\"stateutil.flink.avro\",\"size\":4}},"
            + "{\"name\":\"ok\",\"type\":\"boolean\"},"
            + "{\"name\":\"ratio\",\"type\":\"float\"},"
            + "{\"name\":\"raw\",\"type\":\"bytes\"}]}");

    public long id;
    public Object sensor;
    public List<Integer> samples;
    public Map<String, Long> labels;
    public String note;
    public Object choice;
    public ByteBuffer amount;
    public Object price;
    public int day;
    public long at;
    public long atMicros;
    public int time;
    public long timeMicros;
    public String uid;
    public Object hash;
    public boolean ok;
    public float ratio;
    public ByteBuffer raw;

    public Reading() {}

    @Override
    public Schema getSchema() {
        return SCHEMA$;
    }

    @Override
    public Object get(int field) {
        switch (field) {
            case 0: return id;
            case 1: return sensor;
            case 2: return samples;
            case 3: return labels;
            case 4: return note;
            case 5: return choice;
            case 6: return amount;
            case 7: return price;
            case 8: return day;
            case 9: return at;
            case 10: return atMicros;
            case 11: return time;
            case 12: return timeMicros;
            case 13: return uid;
            case 14: return hash;
            case 15: return ok;
            case 16: return ratio;
            case 17: return raw;
            default: throw new IndexOutOfBoundsException("field " + field);
        }
    }

    @SuppressWarnings("unchecked")
    @Override
    public void put(int field, Object v) {
        switch (field) {
            case 0: id = (Long) v; break;
            case 1: sensor = v; break;
            case 2: samples = (List<Integer>) v; break;
            case 3: labels = (Map<String, Long>) v; break;
            case 4: note = v == null ? null : v.toString(); break;
            case 5: choice = v instanceof CharSequence ? v.toString() : v; break;
            case 6: amount = (ByteBuffer) v; break;
            case 7: price = v; break;
            case 8: day = (Integer) v; break;
            case 9: at = (Long) v; break;
            case 10: atMicros = (Long) v; break;
            case 11: time = (Integer) v; break;
            case 12: timeMicros = (Long) v; break;
            case 13: uid = v.toString(); break;
            case 14: hash = v; break;
            case 15: ok = (Boolean) v; break;
            case 16: ratio = (Float) v; break;
            case 17: raw = (ByteBuffer) v; break;
            default: throw new IndexOutOfBoundsException("field " + field);
        }
    }
}
