package stateutil.flink.jobs;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.StatefulSink;
import org.apache.flink.api.connector.sink2.TwoPhaseCommittingSink;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A sink with writer state and a committer as Flink 1.18 declares them (StatefulSink,
 * TwoPhaseCommittingSink; 1.19 added SupportsWriterState and SupportsCommitter) whose writers
 * dump, while Flink snapshots them, the states and committables the connector's serializers
 * get (SinkDumps). The file and Kafka sinks of 1.18 implement both.
 */
abstract class DumpingSink<S, C> implements StatefulSink<String, S>, TwoPhaseCommittingSink<String, C> {
    private static final long serialVersionUID = 1L;

    /** The committer's CommittableCollector serializer in 1.18: checkpoints and subtasks version 0. */
    static final long COLLECTOR_CHECKPOINT_VERSION = 0, COLLECTOR_SUBTASK_VERSION = 0;

    private final Sink<String> inner;
    final String uid;
    final int parallelism;

    DumpingSink(Sink<String> inner, String uid, int parallelism) {
        this.inner = inner;
        this.uid = uid;
        this.parallelism = parallelism;
    }

    /** The JSON of a writer state as stateutil shows it. */
    abstract Object stateJson(S state);

    /** The JSON of a committable as stateutil shows it. */
    abstract Object committableJson(C committable, int version);

    @SuppressWarnings("unchecked")
    private StatefulSink<String, S> stateful() {
        return (StatefulSink<String, S>) inner;
    }

    @SuppressWarnings("unchecked")
    private TwoPhaseCommittingSink<String, C> committing() {
        return (TwoPhaseCommittingSink<String, C>) inner;
    }

    @Override
    public Writer createWriter(InitContext context) throws IOException {
        return new Writer(stateful().createWriter(context), context.getSubtaskId());
    }

    @Override
    public Writer restoreWriter(InitContext context, Collection<S> states) throws IOException {
        return new Writer(stateful().restoreWriter(context, states), context.getSubtaskId());
    }

    @Override
    public SimpleVersionedSerializer<S> getWriterStateSerializer() {
        return stateful().getWriterStateSerializer();
    }

    @Override
    public Committer<C> createCommitter() throws IOException {
        return committing().createCommitter();
    }

    @Override
    public SimpleVersionedSerializer<C> getCommittableSerializer() {
        return committing().getCommittableSerializer();
    }

    @SuppressWarnings("unchecked")
    final class Writer implements StatefulSink.StatefulSinkWriter<String, S>, TwoPhaseCommittingSink.PrecommittingSinkWriter<String, C> {
        private final StatefulSink.StatefulSinkWriter<String, S> w;
        private final int subtask;
        private List<C> prepared = new ArrayList<>();

        Writer(StatefulSink.StatefulSinkWriter<String, S> w, int subtask) {
            this.w = w;
            this.subtask = subtask;
        }

        @Override
        public void write(String element, Context context) throws IOException, InterruptedException {
            w.write(element, context);
        }

        @Override
        public void flush(boolean endOfInput) throws IOException, InterruptedException {
            w.flush(endOfInput);
        }

        @Override
        public void writeWatermark(Watermark watermark) throws IOException, InterruptedException {
            w.writeWatermark(watermark);
        }

        @Override
        public Collection<C> prepareCommit() throws IOException, InterruptedException {
            Collection<C> c = ((TwoPhaseCommittingSink.PrecommittingSinkWriter<String, C>) w).prepareCommit();
            prepared = new ArrayList<>(c);
            return c;
        }

        @Override
        public List<S> snapshotState(long checkpointId) throws IOException {
            List<S> states = w.snapshotState(checkpointId);
            SinkDumps.snapshot(DumpingSink.this, checkpointId, subtask, states, prepared);
            prepared = new ArrayList<>();
            return states;
        }

        @Override
        public void close() throws Exception {
            w.close();
        }
    }
}
