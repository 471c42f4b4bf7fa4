package stateutil.flink.jobs;

import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;

import stateutil.flink.Dumps;
import stateutil.flink.Job;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;
import stateutil.flink.RestoredStateDumper;

/**
 * What the DataStream witness jobs ({@link CepJob}, {@link ZooJob}) share: record r at event
 * time r seconds, keys "&lt;prefix&gt;-&lt;r % keys&gt;" (keys = N/10), a count of the records
 * the source emitted ("emitted") and of those the keyed operator took ("keyed"), and a dump
 * view that restores the snapshot into {@link RestoredStateDumper}s under the keyed
 * operators' uids, fed by the same source through the same key selector, so that the records
 * an unaligned checkpoint kept in flight are read back as Flink wrote them.
 */
abstract class Witness implements Job {
    static final String SOURCE = "source", EMITTED = "emitted", KEYED = "keyed";

    final String prefix;

    Witness(String prefix) {
        this.prefix = prefix;
    }

    static long keys(Params p) {
        return Jobs.keys(p, 10);
    }

    /** The uids of the job's keyed operators on the main source (the dump view's dumpers). */
    abstract List<String> keyedUids();

    @Override
    public Map<String, Long> expected(Params p) {
        // With records in flight the keyed operators hold some of them only.
        return p.unaligned ? Map.of(EMITTED, p.records) : Map.of(EMITTED, p.records, KEYED, p.records);
    }

    @Override
    public List<KeyedSpec> keyed(Params p) {
        return List.of();
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(Jobs.sourceState(SOURCE));
    }

    @Override
    public String dumpNote() {
        return "Flink restores the snapshot into a dump view whose operators dump every state and timer the snapshot records, with its serializers";
    }

    DataStream<Long> source(StreamExecutionEnvironment env, Params p) {
        return Jobs.source(env, SOURCE, p.records, Jobs.PARTITIONS,
                        WatermarkStrategy.<Long>forMonotonousTimestamps().withTimestampAssigner((r, ts) -> r * 1000))
                .map(new SqlJob.Count<Long>(EMITTED)).uid(EMITTED).name(EMITTED);
    }

    @Override
    public DumpView dumpView() {
        return this::buildDumpView;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    void buildDumpView(StreamExecutionEnvironment env, Params p) throws Exception {
        DataStream<Long> src = source(env, p);
        for (String uid : keyedUids()) {
            src.keyBy(new Key(prefix, keys(p)), Types.STRING)
                    .transform(uid, Types.LONG, (OneInputStreamOperator) new RestoredStateDumper<String>(uid))
                    .uid(uid);
        }
        extraDumpView(env, p, src);
    }

    /** Dumpers for the job's operators that are not keyed on the main source. */
    void extraDumpView(StreamExecutionEnvironment env, Params p, DataStream<Long> src) throws Exception {}

    /**
     * "&lt;prefix&gt;-&lt;r % keys&gt;". Flink calls it on both sides of the keyBy; in the
     * receiving task (not a source's), once per record the keyed operator takes, it counts the
     * record ("keyed") and waits {@link Dumps#throttleMillis}, which backs the records up in
     * the channels while an unaligned checkpoint is taken.
     */
    static final class Key implements KeySelector<Long, String> {
        private final String prefix;
        private final long keys;

        Key(String prefix, long keys) {
            this.prefix = prefix;
            this.keys = keys;
        }

        @Override
        public String getKey(Long r) throws InterruptedException {
            if (!Thread.currentThread().getName().startsWith("Source")) {
                Dumps.counter(KEYED).incrementAndGet();
                Dumps.throttle();
            }
            return prefix + "-" + (r % keys);
        }
    }
}
