package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

import stateutil.flink.Json;
import stateutil.flink.Params;

/**
 * Flink's Kafka connector against a real broker (bootstrap servers in STATEUTIL_KAFKA_BOOTSTRAP,
 * scripts/kafka-broker.sh): the job first writes the record numbers to topic "in" (one
 * partition per subtask, record r in partition r % parallelism); a KafkaSource (uid "kafka")
 * reads them and stops after 3/4 of each partition, so the savepoint holds unfinished splits; an
 * exactly-once KafkaSink (uid "kafka-sink", transactional id prefix "stateutil") writes them to
 * topic "out", so the savepoint holds its writer states and the committables of its open
 * transactions. Keys "part-" + (r % 4): ValueState "count" and "last". The source dumps its
 * splits, the sink its writer states and the committables its committer holds (DumpingSink).
 * Snapshots are read, not restored: their transactions lived on the broker of the run.
 */
public final class KafkaJob extends ConnectorJob {
    static final String SOURCE = "kafka";
    static final String SINK = "kafka-sink";

    @Override
    public String name() {
        return "kafka";
    }

    @Override
    String source() {
        return SOURCE;
    }

    /** Records each source reader emits: three quarters of its partition. */
    @Override
    long readerLimit(Params p) {
        return p.records / p.parallelism * 3 / 4;
    }

    static String bootstrap() {
        String b = System.getenv("STATEUTIL_KAFKA_BOOTSTRAP");
        if (b == null || b.isEmpty()) {
            throw new IllegalStateException("the kafka job needs a broker: run it through scripts/kafka-broker.sh, which sets STATEUTIL_KAFKA_BOOTSTRAP");
        }
        return b;
    }

    /** Topic "in" with one partition per subtask holding the record numbers, and an empty topic "out". */
    static void writeInput(String bootstrap, Params p) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic("in", p.parallelism, (short) 1), new NewTopic("out", p.parallelism, (short) 1))).all().get();
        }
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (long r = 0; r < p.records; r++) {
                producer.send(new ProducerRecord<>("in", (int) (r % p.parallelism), null, String.valueOf(r)));
            }
            producer.flush();
        }
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        String bootstrap = bootstrap();
        try {
            writeInput(bootstrap, p);
        } catch (Exception e) {
            throw new IllegalStateException("writing topic \"in\" to the broker at " + bootstrap, e);
        }
        KafkaSource<String> source = KafkaSource.<String>builder()
                .setBootstrapServers(bootstrap)
                .setTopics("in")
                .setGroupId("stateutil")
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setValueOnlyDeserializer(new SimpleStringSchema())
                .build();
        Properties producer = new Properties();
        producer.put("transaction.timeout.ms", "600000");
        KafkaSink<String> sink = KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setKafkaProducerConfig(producer)
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix("stateutil")
                .setRecordSerializer(KafkaRecordSerializationSchema.builder().setTopic("out").setValueSerializationSchema(new SimpleStringSchema()).build())
                .build();
        DataStream<Long> records = keyedFrom(env, source, KafkaJob::splitJson, p);
        records.map(String::valueOf).returns(Types.STRING).uid("render")
                .sinkTo(new DumpingKafkaSink(sink, SINK, p.parallelism))
                .uid(SINK);
    }

    /** The JSON of a KafkaPartitionSplit as stateutil shows it (no stopping offset: Long.MIN_VALUE, as the connector writes it). */
    static Object splitJson(KafkaPartitionSplit s) {
        TreeMap<String, Object> m = Json.obj();
        m.put("@split", "KafkaPartitionSplit");
        m.put("topic", s.getTopic());
        m.put("partition", (long) s.getPartition());
        m.put("startingOffset", s.getStartingOffset());
        m.put("stoppingOffset", s.getStoppingOffset().orElse(KafkaPartitionSplit.NO_STOPPING_OFFSET));
        return m;
    }

    /**
     * A KafkaSink dumping its writer states and committables (see DumpingSink); connector 3.x
     * keeps KafkaWriterState and KafkaCommittable package-private, so their getters are called
     * by name.
     */
    static final class DumpingKafkaSink extends DumpingSink<Object, Object> {
        private static final long serialVersionUID = 1L;

        @SuppressWarnings({"unchecked", "rawtypes"})
        DumpingKafkaSink(KafkaSink<String> inner, String uid, int parallelism) {
            super((org.apache.flink.api.connector.sink2.Sink) inner, uid, parallelism);
        }

        @Override
        Object stateJson(Object s) {
            long version = getWriterStateSerializer().getVersion();
            TreeMap<String, Object> m = Json.obj();
            m.put("@writerState", "KafkaWriterState");
            m.put("@version", version);
            m.put("transactionalIdPrefix", SinkDumps.call(s, "getTransactionalIdPrefix"));
            if (version >= 2) {
                m.put("ownedSubtaskId", (long) (Integer) SinkDumps.call(s, "getOwnedSubtaskId"));
                m.put("totalNumberOfOwnedSubtasks", (long) (Integer) SinkDumps.call(s, "getTotalNumberOfOwnedSubtasks"));
                m.put("transactionOwnership", (long) ((Enum<?>) SinkDumps.call(s, "getTransactionOwnership")).ordinal());
                List<Object> txs = new ArrayList<>();
                for (Object t : (Collection<?>) SinkDumps.call(s, "getPrecommittedTransactionalIds")) {
                    TreeMap<String, Object> tx = Json.obj();
                    tx.put("transactionalId", SinkDumps.call(t, "getTransactionalId"));
                    tx.put("checkpointId", SinkDumps.call(t, "getCheckpointId"));
                    txs.add(tx);
                }
                m.put("precommittedTransactions", txs);
            }
            return m;
        }

        @Override
        Object committableJson(Object c, int version) {
            TreeMap<String, Object> m = Json.obj();
            m.put("@committable", "KafkaCommittable");
            m.put("epoch", (long) (Short) SinkDumps.call(c, "getEpoch"));
            m.put("producerId", SinkDumps.call(c, "getProducerId"));
            m.put("transactionalId", SinkDumps.call(c, "getTransactionalId"));
            return m;
        }
    }
}
