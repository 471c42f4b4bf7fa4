package stateutil.flink.jobs;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;

import stateutil.flink.Compat;
import stateutil.flink.SinkBase;

/**
 * A sink with writer state and a committer (Flink 1.19 on: SupportsWriterState,
 * SupportsCommitter) whose writers dump, while Flink snapshots them, the states and
 * committables the connector's serializers get (SinkDumps).
 */
abstract class DumpingSink<S, C> extends SinkBase<String> implements SupportsWriterState<String, S>, SupportsCommitter<C> {
    private static final long serialVersionUID = 1L;

    /** The committer's CommittableCollector serializer: checkpoints version 1, subtasks 1 in 1.x and 2 from 2.0 on. */
    static final long COLLECTOR_CHECKPOINT_VERSION = 1, COLLECTOR_SUBTASK_VERSION = Compat.MAJOR == 1 ? 1 : 2;

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
    private SupportsWriterState<String, S> stateful() {
        return (SupportsWriterState<String, S>) inner;
    }

    @SuppressWarnings("unchecked")
    private SupportsCommitter<C> committing() {
        return (SupportsCommitter<C>) inner;
    }

    @Override
    public SinkWriter<String> createWriter(WriterInitContext context) throws IOException {
        return new Writer(inner.createWriter(context), context.getTaskInfo().getIndexOfThisSubtask());
    }

    @Override
    public StatefulSinkWriter<String, S> restoreWriter(WriterInitContext context, Collection<S> states) throws IOException {
        return new Writer(stateful().restoreWriter(context, states), context.getTaskInfo().getIndexOfThisSubtask());
    }

    @Override
    public SimpleVersionedSerializer<S> getWriterStateSerializer() {
        return stateful().getWriterStateSerializer();
    }

    @Override
    public Committer<C> createCommitter(CommitterInitContext context) throws IOException {
        return committing().createCommitter(context);
    }

    @Override
    public SimpleVersionedSerializer<C> getCommittableSerializer() {
        return committing().getCommittableSerializer();
    }

    @SuppressWarnings("unchecked")
    final class Writer implements StatefulSinkWriter<String, S>, CommittingSinkWriter<String, C> {
        private final SinkWriter<String> w;
        private final int subtask;
        private List<C> prepared = new ArrayList<>();

        Writer(SinkWriter<String> w, int subtask) {
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
            Collection<C> c = ((CommittingSinkWriter<String, C>) w).prepareCommit();
            prepared = new ArrayList<>(c);
            return c;
        }

        @Override
        public List<S> snapshotState(long checkpointId) throws IOException {
            List<S> states = ((StatefulSinkWriter<String, S>) w).snapshotState(checkpointId);
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
