package stateutil.flink.jobs;

import java.util.TreeMap;

import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.file.sink.FileSinkCommittable;
import org.apache.flink.connector.file.sink.writer.FileWriterBucketState;
import org.apache.flink.core.fs.Path;

import stateutil.flink.Json;

/** A FileSink dumping its bucket states and committables (see DumpingSink). */
final class DumpingFileSink extends DumpingSink<FileWriterBucketState, FileSinkCommittable> {
    private static final long serialVersionUID = 1L;

    DumpingFileSink(FileSink<String> inner, String uid, int parallelism) {
        super(inner, uid, parallelism);
    }

    @Override
    Object committableJson(FileSinkCommittable c, int version) {
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

    @Override
    Object stateJson(FileWriterBucketState s) {
        TreeMap<String, Object> m = Json.obj();
        m.put("@writerState", "FileWriterBucketState");
        m.put("bucketId", s.getBucketId());
        m.put("bucketPath", s.getBucketPath().toString());
        m.put("inProgressFileCreationTime", s.getInProgressFileCreationTime());
        boolean has = (Boolean) SinkDumps.call(s, "hasInProgressFileRecoverable");
        m.put("inProgressFile", has ? fileJson(SinkDumps.call(s, "getInProgressFileRecoverable"), "getResumeRecoverable", "resumable") : null);
        return m;
    }

    /** An output-stream-based part file's recoverable: its path, size (pending files) and the file system's recoverable. */
    private static Object fileJson(Object f, String getter, String field) {
        TreeMap<String, Object> m = Json.obj();
        Path p = (Path) SinkDumps.call(f, "getPath");
        m.put("path", p == null ? null : p.toUri().toString());
        if (field.equals("commitRecoverable")) {
            m.put("size", (Long) SinkDumps.call(f, "getSize"));
        }
        m.put(field, recoverableJson(SinkDumps.call(f, getter)));
        return m;
    }

    /** The local file system's recoverable (the only file system this job writes to). */
    private static Object recoverableJson(Object r) {
        if (!r.getClass().getName().equals("org.apache.flink.core.fs.local.LocalRecoverable")) {
            throw new IllegalStateException("not a local file's recoverable: " + r.getClass().getName());
        }
        TreeMap<String, Object> m = Json.obj();
        m.put("@recoverable", "LocalRecoverable");
        m.put("targetFile", SinkDumps.call(r, "targetFile").toString());
        m.put("tempFile", SinkDumps.call(r, "tempFile").toString());
        m.put("offset", (Long) SinkDumps.call(r, "offset"));
        return m;
    }
}
