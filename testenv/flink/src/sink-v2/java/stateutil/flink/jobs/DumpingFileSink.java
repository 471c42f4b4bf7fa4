package stateutil.flink.jobs;

import java.io.IOException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeMap;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.file.sink.FileSinkCommittable;
import org.apache.flink.connector.file.sink.writer.FileWriterBucketState;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.io.SimpleVersionedSerializer;

import stateutil.flink.Compat;
import stateutil.flink.Dumps;
import stateutil.flink.Json;
import stateutil.flink.SinkBase;

/**
 * A FileSink whose writers dump, while Flink snapshots them, the bucket states they hand to
 * Flink (writer state "writer_raw_states") and the committables they handed to the committer
 * for that checkpoint (committer state "streaming_committer_raw_states" of its subtask). The
 * bucket states and committables are Flink's objects as its serializers get them; the
 * committer's bookkeeping around them (checkpoint id, subtask, counts, serializer versions) is
 * what Flink's CommittableCollector stores for committables received and not yet committed.
 */
final class DumpingFileSink extends SinkBase<String>
        implements SupportsWriterState<String, FileWriterBucketState>, SupportsCommitter<FileSinkCommittable> {
    private static final long serialVersionUID = 1L;

    private final FileSink<String> inner;
    private final String uid;
    private final int parallelism;

    DumpingFileSink(FileSink<String> inner, String uid, int parallelism) {
        this.inner = inner;
        this.uid = uid;
        this.parallelism = parallelism;
    }

    @Override
    public SinkWriter<String> createWriter(WriterInitContext context) throws IOException {
        return new Writer(inner.createWriter(context), context.getTaskInfo().getIndexOfThisSubtask());
    }

    @Override
    public StatefulSinkWriter<String, FileWriterBucketState> restoreWriter(WriterInitContext context, Collection<FileWriterBucketState> states) throws IOException {
        return new Writer(inner.restoreWriter(context, states), context.getTaskInfo().getIndexOfThisSubtask());
    }

    @Override
    public SimpleVersionedSerializer<FileWriterBucketState> getWriterStateSerializer() {
        return inner.getWriterStateSerializer();
    }

    @Override
    public Committer<FileSinkCommittable> createCommitter(CommitterInitContext context) throws IOException {
        return inner.createCommitter(context);
    }

    @Override
    public SimpleVersionedSerializer<FileSinkCommittable> getCommittableSerializer() {
        return inner.getCommittableSerializer();
    }

    @SuppressWarnings("unchecked")
    final class Writer implements StatefulSinkWriter<String, FileWriterBucketState>, CommittingSinkWriter<String, FileSinkCommittable> {
        private final SinkWriter<String> w;
        private final int subtask;
        private List<FileSinkCommittable> prepared = new ArrayList<>();

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
        public Collection<FileSinkCommittable> prepareCommit() throws IOException, InterruptedException {
            Collection<FileSinkCommittable> c = ((CommittingSinkWriter<String, FileSinkCommittable>) w).prepareCommit();
            prepared = new ArrayList<>(c);
            return c;
        }

        @Override
        public List<FileWriterBucketState> snapshotState(long checkpointId) throws IOException {
            List<FileWriterBucketState> states = ((StatefulSinkWriter<String, FileWriterBucketState>) w).snapshotState(checkpointId);
            for (FileWriterBucketState s : states) {
                Dumps.line(checkpointId, Dumps.operator("split", uid, "writer_raw_states", subtask, bucketJson(s)));
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

    private Object collectorJson(long checkpointId, int subtask, List<FileSinkCommittable> committables) {
        int version = getCommittableSerializer().getVersion();
        List<Object> requests = new ArrayList<>();
        for (FileSinkCommittable c : committables) {
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

    private static Object committableJson(FileSinkCommittable c, int version) {
        TreeMap<String, Object> m = Json.obj();
        m.put("@committable", "FileSinkCommittable");
        m.put("@version", (long) version);
        m.put("pendingFile", c.hasPendingFile() ? fileJson(c.getPendingFile(), "getCommitRecoverable", "commitRecoverable") : null);
        m.put("inProgressFileToCleanup", c.hasInProgressFileToCleanup() ? fileJson(c.getInProgressFileToCleanup(), "getResumeRecoverable", "resumable") : null);
        if (version >= 2) {
            m.put("bucketId", c.getBucketId());
            m.put("compactedFileToCleanup", c.hasCompactedFileToCleanup() ? c.getCompactedFileToCleanup().toUri().toString() : null);
        }
        return m;
    }

    private static Object bucketJson(FileWriterBucketState s) {
        TreeMap<String, Object> m = Json.obj();
        m.put("@writerState", "FileWriterBucketState");
        m.put("bucketId", s.getBucketId());
        m.put("bucketPath", s.getBucketPath().toString());
        m.put("inProgressFileCreationTime", s.getInProgressFileCreationTime());
        boolean has = (Boolean) call(s, "hasInProgressFileRecoverable");
        m.put("inProgressFile", has ? fileJson(call(s, "getInProgressFileRecoverable"), "getResumeRecoverable", "resumable") : null);
        return m;
    }

    /** An output-stream-based part file's recoverable: its path, size (pending files) and the file system's recoverable. */
    private static Object fileJson(Object f, String getter, String field) {
        TreeMap<String, Object> m = Json.obj();
        Path p = (Path) call(f, "getPath");
        m.put("path", p == null ? null : p.toUri().toString());
        if (field.equals("commitRecoverable")) {
            m.put("size", (Long) call(f, "getSize"));
        }
        m.put(field, recoverableJson(call(f, getter)));
        return m;
    }

    /** The local file system's recoverable (the only file system this job writes to). */
    private static Object recoverableJson(Object r) {
        if (!r.getClass().getName().equals("org.apache.flink.core.fs.local.LocalRecoverable")) {
            throw new IllegalStateException("not a local file's recoverable: " + r.getClass().getName());
        }
        TreeMap<String, Object> m = Json.obj();
        m.put("@recoverable", "LocalRecoverable");
        m.put("targetFile", call(r, "targetFile").toString());
        m.put("tempFile", call(r, "tempFile").toString());
        m.put("offset", (Long) call(r, "offset"));
        return m;
    }

    /** Calls a no-argument method, package-private ones too (Flink keeps some getters internal). */
    private static Object call(Object o, String name) {
        try {
            Method m = o.getClass().getDeclaredMethod(name);
            m.setAccessible(true);
            return m.invoke(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(o.getClass().getName() + "." + name, e);
        }
    }
}
