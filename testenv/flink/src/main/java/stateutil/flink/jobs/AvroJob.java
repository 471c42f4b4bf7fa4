package stateutil.flink.jobs;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.UUID;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.formats.avro.typeutils.AvroTypeInfo;

import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * An Avro SpecificRecord ({@link Reading}) on String keys "reading-&lt;r % keys&gt;": a nested
 * record, an enum, an array, a map (a TreeMap, so Flink writes its entries in key order), a
 * null union and a three-branch union, decimals in bytes and in a fixed, the date, time and
 * timestamp logical types, a uuid, a fixed, boolean, float and bytes.
 */
public final class AvroJob extends StringKeyedJob {
    public AvroJob() {
        super("reading");
    }

    @Override
    public String name() {
        return "avro";
    }

    @Override
    List<StateDef> states() {
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.value("reading", new AvroTypeInfo<>(Reading.class)));
        return s;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        Schema schema = Reading.SCHEMA$;
        Schema sensorSchema = schema.getField("sensor").schema();
        GenericRecord sensor = new GenericData.Record(sensorSchema);
        sensor.put("name", "sensor-" + (r % 7));
        sensor.put("kind", new GenericData.EnumSymbol(sensorSchema.getField("kind").schema(), new String[] {"TEMP", "HUMIDITY", "PRESSURE"}[(int) (r % 3)]));
        Reading x = new Reading();
        x.id = r;
        x.sensor = sensor;
        x.samples = new ArrayList<>(r % 4 == 0 ? List.of() : List.of((int) r, (int) -r, Integer.MAX_VALUE));
        TreeMap<String, Long> labels = new TreeMap<>();
        for (int i = 0; i < r % 3; i++) {
            labels.put("l" + i, r * (i + 1));
        }
        x.labels = labels;
        x.note = r % 2 == 0 ? null : "note " + r + " é€😀";
        x.choice = r % 3 == 0 ? null : r % 3 == 1 ? "c" + r : (Object) (r * 1000L);
        x.amount = ByteBuffer.wrap(BigInteger.valueOf((r % 5 == 0 ? -1 : 1) * (r * 12345 + 7)).toByteArray());
        byte[] price = new byte[8];
        byte[] unscaled = BigInteger.valueOf(r % 2 == 0 ? -r * 1001 : r * 99999).toByteArray();
        byte pad = unscaled[0] < 0 ? (byte) 0xff : 0;
        for (int i = 0; i < 8 - unscaled.length; i++) {
            price[i] = pad;
        }
        System.arraycopy(unscaled, 0, price, 8 - unscaled.length, unscaled.length);
        x.price = new GenericData.Fixed(schema.getField("price").schema(), price);
        x.day = (int) (19000 + r);
        x.at = 1_700_000_000_000L + r * 3_600_123L;
        x.atMicros = 1_700_000_000_000_000L + r * 3_600_123_457L;
        x.time = (int) ((r * 1_234_567) % 86_400_000);
        x.timeMicros = (r * 1_234_567_891L) % 86_400_000_000L;
        x.uid = new UUID(r * 0x9e3779b97f4a7c15L, ~r).toString();
        x.hash = new GenericData.Fixed(schema.getField("hash").schema(), new byte[] {(byte) r, (byte) (r >> 8), 0, (byte) 0xff});
        x.ok = r % 2 == 0;
        x.ratio = r / 4.0f;
        x.raw = ByteBuffer.wrap(new byte[] {(byte) r, 0, (byte) 0x80});
        ((ValueState) s.get(0)).update(x);
    }
}
