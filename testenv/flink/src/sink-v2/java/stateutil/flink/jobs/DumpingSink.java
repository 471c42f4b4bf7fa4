package stateutil.flink.jobs;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeMap;

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
import stateutil.flink.Dumps;
import stateutil.flink.Json;
import stateutil.flink.SinkBase;

/**
 * A sink with writer state and a committer whose writers dump, while Flink snapshots them, the
 * states they hand to Flink (writer state "writer_raw_states") and the committables they handed
 * to the committer for that checkpoint (committer state "streaming_committer_raw_states" of its
 * subtask). The states and committables are the connector's objects as its serializers get
 * them; the committer's bookkeeping around them (checkpoint id, subtask, counts, serializer
 * versions) is what Flink's CommittableCollector stores for committables received and not yet
 * committed.
 */
abstract class DumpingSink<S, C> extends SinkBase<String> implements SupportsWriterState<String, S>, SupportsCommitter<C> {
    private static final long serialVersionUID = 1L;

    private final Sink<String> inner;
    private final String uid;
    private final int parallelism;

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
            for (S s : states) {
                Dumps.line(checkpointId, Dumps.operator("split", uid, "writer_raw_states", subtask, stateJson(s)));
            }
            Dumps.line(checkpointId, Dumps.operator("split", "Sink Committer: " + uid, "streaming_committer_raw_states", subtask,
                    collectorJson(checkpointId, subtask, prepared)));
            prepared = new ArrayList<>();
            return states;
        }

        @Override
        public void close() throws Exception {
            w.close();
        }
    }

    private Object collectorJson(long checkpointId, int subtask, List<C> committables) {
        int version = getCommittableSerializer().getVersion();
        List<Object> requests = new ArrayList<>();
        for (C c : committables) {
            TreeMap<String, Object> q = Json.obj();
            q.put("committable", committableJson(c, version));
            q.put("numberOfRetries", 0L);
            q.put("state", 0L); // CommitRequestState.RECEIVED
            requests.add(q);
        }
        TreeMap<String, Object> sub = Json.obj();
        sub.put("subtaskId", (long) subtask);
        sub.put("requestsVersion", 0L);
        sub.put("requests", requests);
        sub.put("numCommittables", (long) committables.size());
        if (Compat.MAJOR == 1) {
            sub.put("numDrained", 0L); // dropped from the subtask serializer in 2.0 (its version 2)
        }
        sub.put("numFailed", 0L);
        TreeMap<String, Object> cp = Json.obj();
        cp.put("checkpointId", checkpointId);
        cp.put("numberOfSubtasks", (long) parallelism);
        cp.put("subtasksVersion", Compat.MAJOR == 1 ? 1L : 2L);
        cp.put("subtasks", List.of(sub));
        TreeMap<String, Object> m = Json.obj();
        m.put("@committerState", "CommittableCollector");
        m.put("checkpointsVersion", 1L);
        m.put("checkpoints", List.of(cp));
        return m;
    }

    /** Calls a no-argument method, package-private ones too (connectors keep some getters internal). */
    static Object call(Object o, String name) {
        try {
            java.lang.reflect.Method m = o.getClass().getDeclaredMethod(name);
            m.setAccessible(true);
            return m.invoke(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(o.getClass().getName() + "." + name, e);
        }
    }
}
