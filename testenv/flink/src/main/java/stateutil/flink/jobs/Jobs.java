package stateutil.flink.jobs;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import stateutil.flink.Job;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.PartitionSource;

/** The job registry and what the jobs share. */
public final class Jobs {
    /**
     * Set when the harness reads a snapshot back (restore-dump, spa-dump, spa-rewrite) rather
     * than writing one: Flink keeps a state's time to live in the job, not in the snapshot, so
     * a job that reads back gives its TTL'd states a century, and a snapshot recorded days ago
     * shows every entry it holds.
     */
    public static volatile boolean readingBack;

    /** The time to live of a TTL'd state: written, as the job declares it; read back, a century. */
    public static Duration ttl(Duration declared) {
        return readingBack ? Duration.ofDays(36_500) : declared;
    }

    private Jobs() {}

    /** Partitions of every job's main source. */
    public static final int PARTITIONS = 4;

    public static final Map<String, Job> ALL = new LinkedHashMap<>();

    static {
        for (Job j : new Job[] {new BasicJob(), new LongKeysJob(), new TupleKeysJob(), new TypesJob(), new BigJob(), new CountersJob(), new RowDataJob(), new OrdersJob(), new AvroJob(), new RowTypesJob(), new CollectionsJob(), new HeapKryoJob(), new KryoJdkJob(), new WindowsJob(), new ConnectorsJob(), new KafkaJob(), SqlJob.regular(), SqlJob.eventTime(), new CepJob(), new ZooJob(), SqlWitnessJob.ops(), SqlWitnessJob.events(), SqlWitnessJob.batch(), new UpgradeJob(false), new UpgradeJob(true), new UpgradeBlockedJob()}) {
            ALL.put(j.name(), j);
        }
        try {
            // Flink 1.x only (src/flink1): Flink 2 has no Scala API.
            Job scala = (Job) Class.forName("stateutil.flink.jobs.ScalaJob").getDeclaredConstructor().newInstance();
            ALL.put(scala.name(), scala);
        } catch (ClassNotFoundException e) {
            // a Flink 2 build
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    public static Job get(String name) {
        Job j = ALL.get(name);
        if (j == null && name.equals("scala")) {
            throw new IllegalArgumentException("job scala needs Flink 1.x: Flink 2 has no Scala API (flink-scala)");
        }
        if (j == null) {
            throw new IllegalArgumentException("unknown job " + name + " (jobs: " + String.join(", ", ALL.keySet()) + ")");
        }
        return j;
    }

    /** The main source: record numbers 0..records-1 in {@link #PARTITIONS} partitions. */
    public static SingleOutputStreamOperator<Long> source(StreamExecutionEnvironment env, String uid, long records, int partitions) {
        return env.fromSource(new PartitionSource(uid, records, partitions), WatermarkStrategy.noWatermarks(), uid).uid(uid);
    }

    /** The main source with event time: each split's records carry timestamps and watermarks. */
    public static SingleOutputStreamOperator<Long> source(StreamExecutionEnvironment env, String uid, long records, int partitions, WatermarkStrategy<Long> w) {
        return env.fromSource(new PartitionSource(uid, records, partitions), w, uid).uid(uid);
    }

    /** The split state of a PartitionSource, as Flink stores it. */
    public static OperatorStateSpec sourceState(String uid) {
        return new OperatorStateSpec(uid, PartitionSource.STATE_NAME, OperatorStateSpec.Mode.SPLIT,
                PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO, null);
    }

    /** Number of keys: p.keys if set, else records/divisor, rounded down to a multiple of the partitions (at least one per partition). */
    public static long keys(stateutil.flink.Params p, long divisor) {
        long k = p.keys > 0 ? p.keys : p.records / divisor;
        k = k / PARTITIONS * PARTITIONS;
        return Math.max(PARTITIONS, k);
    }
}
