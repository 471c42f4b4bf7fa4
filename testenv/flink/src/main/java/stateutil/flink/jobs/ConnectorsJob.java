package stateutil.flink.jobs;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.file.src.FileSourceSplit;
import org.apache.flink.connector.file.src.reader.SimpleStreamFormat;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.configuration.Configuration;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.BucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.PartFileInfo;
import org.apache.flink.streaming.api.functions.sink.filesystem.RollingPolicy;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.SimpleVersionedStringSerializer;

import stateutil.flink.Dumps;
import stateutil.flink.Params;

/**
 * Flink's file connector: a FileSource (uid "files") reads text files of record numbers (file
 * i holds the records r with r % 4 == i, one a line) and a FileSink (uid "file-sink", row
 * format) writes them back out. Each source reader stops after 3/4 of records/parallelism lines,
 * in the middle of its second file, so the savepoint holds unfinished splits with their reader
 * positions; the sink's bucket "rolled" rolls its part file on every checkpoint (pending files,
 * committer state) and bucket "open" never does (in-progress files, writer state). Keys
 * "part-" + (r % 4): ValueState "count" and "last". The source dumps its split state, the sink
 * its writer's bucket states and the committables its committer holds (DumpingFileSink; Flink
 * 1.18 on). The files live under the run's temporary directory, so the job's snapshots are
 * read, not restored.
 */
public final class ConnectorsJob extends ConnectorJob {
    static final String SOURCE = "files";
    static final String SINK = "file-sink";

    @Override
    public String name() {
        return "connectors";
    }

    @Override
    String source() {
        return SOURCE;
    }

    /** Lines each source reader emits: three quarters of its share, so it stops inside its second file. */
    @Override
    long readerLimit(Params p) {
        return p.records * 3 / (4L * p.parallelism);
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        File root = new File(System.getProperty("java.io.tmpdir"), "connectors");
        File in = new File(root, "in");
        try {
            writeInput(in, p.records);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        FileSource<String> files = FileSource.forRecordStreamFormat(new Lines(), new Path(in.toURI())).build();
        DataStream<Long> records = keyedFrom(env, files, ConnectorsJob::splitJson, p);
        records.map(String::valueOf).returns(Types.STRING).uid("render")
                .sinkTo(new DumpingFileSink(FileSink.forRowFormat(new Path(new File(root, "out").toURI()), new SimpleStringEncoder<String>())
                        .withBucketAssigner(new ByParity())
                        .withRollingPolicy(new RollRolled())
                        .build(), SINK, p.parallelism))
                .uid(SINK);
    }

    /** Files part-0..part-3, file i the numbers r < records with r % 4 == i, one a line. */
    static void writeInput(File dir, long records) throws IOException {
        if (!dir.isDirectory() && !dir.mkdirs()) {
            throw new IOException("cannot make " + dir);
        }
        for (int i = 0; i < Jobs.PARTITIONS; i++) {
            try (PrintWriter w = new PrintWriter(new File(dir, "part-" + i + ".txt"), StandardCharsets.UTF_8)) {
                for (long r = i; r < records; r += Jobs.PARTITIONS) {
                    w.print(r + "\n");
                }
            }
        }
    }

    /** Text lines (TextLineInputFormat's name changed across versions): not splittable, positions by record count. */
    static final class Lines extends SimpleStreamFormat<String> {
        private static final long serialVersionUID = 1L;

        @Override
        public Reader<String> createReader(Configuration config, FSDataInputStream in) {
            BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            return new Reader<String>() {
                @Override
                public String read() throws IOException {
                    return r.readLine();
                }

                @Override
                public void close() throws IOException {
                    r.close();
                }
            };
        }

        @Override
        public TypeInformation<String> getProducedType() {
            return Types.STRING;
        }
    }

    static final class Parse extends RichMapFunction<String, Long> {
        @Override
        public Long map(String line) {
            Dumps.counter("read-" + stateutil.flink.Compat.subtask(getRuntimeContext())).incrementAndGet();
            return Long.parseLong(line);
        }
    }

    /** Bucket "rolled" for even numbers, "open" for odd ones. */
    static final class ByParity implements BucketAssigner<String, String> {
        @Override
        public String getBucketId(String element, Context context) {
            return Long.parseLong(element) % 2 == 0 ? "rolled" : "open";
        }

        @Override
        public SimpleVersionedSerializer<String> getSerializer() {
            return SimpleVersionedStringSerializer.INSTANCE;
        }
    }

    /** Rolls bucket "rolled" on every checkpoint, nothing else ever. */
    static final class RollRolled implements RollingPolicy<String, String> {
        @Override
        public boolean shouldRollOnCheckpoint(PartFileInfo<String> f) {
            return "rolled".equals(f.getBucketId());
        }

        @Override
        public boolean shouldRollOnEvent(PartFileInfo<String> f, String element) {
            return false;
        }

        @Override
        public boolean shouldRollOnProcessingTime(PartFileInfo<String> f, long now) {
            return false;
        }
    }

    /** The JSON of a FileSourceSplit as stateutil shows it. */
    static Object splitJson(FileSourceSplit s) {
        TreeMap<String, Object> m = stateutil.flink.Json.obj();
        m.put("@split", "FileSourceSplit");
        m.put("id", s.splitId());
        m.put("path", pathJson(s.path()));
        m.put("offset", s.offset());
        m.put("length", s.length());
        m.put("modificationTime", s.fileModificationTime());
        m.put("fileSize", s.fileSize());
        m.put("hostnames", List.of(s.hostnames()));
        TreeMap<String, Object> pos = null;
        if (s.getReaderPosition().isPresent()) {
            pos = stateutil.flink.Json.obj();
            pos.put("offset", s.getReaderPosition().get().getOffset());
            pos.put("recordsAfterOffset", s.getReaderPosition().get().getRecordsAfterOffset());
        }
        m.put("readerPosition", pos);
        return m;
    }

    /** A Path as Flink writes it: its URI's parts (null where absent, port -1 when none). */
    static Object pathJson(Path p) {
        URI u = p.toUri();
        TreeMap<String, Object> m = stateutil.flink.Json.obj();
        m.put("scheme", u.getScheme());
        m.put("userInfo", u.getUserInfo());
        m.put("host", u.getHost());
        m.put("port", (long) u.getPort());
        m.put("path", u.getPath());
        m.put("query", u.getQuery());
        m.put("fragment", u.getFragment());
        return m;
    }

    /** The JSON of a split as stateutil shows it. */
    interface SplitJson<S> extends java.io.Serializable {
        Object json(S split);
    }

    /**
     * A source around another whose readers dump their split state and stop emitting after
     * limit records (so their splits stay unfinished); restored, they dump the splits they get
     * and end. Its records are counted by the caller's first operator ("read-" + subtask).
     */
    static final class Stopping<S extends SourceSplit, E> implements Source<String, S, E> {
        private final Source<String, S, E> inner;
        private final String uid;
        private final long limit;
        private final SplitJson<S> json;

        Stopping(Source<String, S, E> inner, String uid, long limit, SplitJson<S> json) {
            this.inner = inner;
            this.uid = uid;
            this.limit = limit;
            this.json = json;
        }

        @Override
        public Boundedness getBoundedness() {
            return inner.getBoundedness();
        }

        @Override
        public SplitEnumerator<S, E> createEnumerator(SplitEnumeratorContext<S> ctx) throws Exception {
            return inner.createEnumerator(ctx);
        }

        @Override
        public SplitEnumerator<S, E> restoreEnumerator(SplitEnumeratorContext<S> ctx, E state) throws Exception {
            return inner.restoreEnumerator(ctx, state);
        }

        @Override
        public SimpleVersionedSerializer<S> getSplitSerializer() {
            return inner.getSplitSerializer();
        }

        @Override
        public SimpleVersionedSerializer<E> getEnumeratorCheckpointSerializer() {
            return inner.getEnumeratorCheckpointSerializer();
        }

        @Override
        public SourceReader<String, S> createReader(SourceReaderContext ctx) throws Exception {
            return new Reader<>(inner.createReader(ctx), uid, ctx.getIndexOfSubtask(), limit, json);
        }
    }

    static final class Reader<S extends SourceSplit> implements SourceReader<String, S> {
        private final SourceReader<String, S> inner;
        private final String uid;
        private final int subtask;
        private final long limit;
        private final SplitJson<S> json;

        Reader(SourceReader<String, S> inner, String uid, int subtask, long limit, SplitJson<S> json) {
            this.inner = inner;
            this.uid = uid;
            this.subtask = subtask;
            this.limit = limit;
            this.json = json;
        }

        private boolean stopped() {
            return Dumps.counter("read-" + subtask).get() >= limit;
        }

        @Override
        public void start() {
            if (Dumps.mode == Dumps.Mode.SNAPSHOT) {
                inner.start();
            }
        }

        @Override
        public InputStatus pollNext(ReaderOutput<String> out) throws Exception {
            if (Dumps.mode == Dumps.Mode.RESTORE) {
                return InputStatus.END_OF_INPUT;
            }
            return stopped() ? InputStatus.NOTHING_AVAILABLE : inner.pollNext(out);
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            if (Dumps.mode == Dumps.Mode.RESTORE) {
                return CompletableFuture.completedFuture(null);
            }
            return stopped() ? new CompletableFuture<>() : inner.isAvailable();
        }

        @Override
        public List<S> snapshotState(long checkpointId) {
            List<S> splits = Dumps.mode == Dumps.Mode.RESTORE ? new ArrayList<>() : inner.snapshotState(checkpointId);
            for (S s : splits) {
                Dumps.snapshotLine(checkpointId, Dumps.operator("split", uid, "SourceReaderState", subtask, json.json(s)));
            }
            return splits;
        }

        @Override
        public void addSplits(List<S> splits) {
            if (Dumps.mode == Dumps.Mode.RESTORE) {
                for (S s : splits) {
                    Dumps.restoreLine(Dumps.operator("split", uid, "SourceReaderState", subtask, json.json(s)));
                }
                return;
            }
            inner.addSplits(splits);
        }

        @Override
        public void notifyNoMoreSplits() {
            if (Dumps.mode == Dumps.Mode.SNAPSHOT) {
                inner.notifyNoMoreSplits();
            }
        }

        @Override
        public void handleSourceEvents(SourceEvent e) {
            inner.handleSourceEvents(e);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) throws Exception {
            inner.notifyCheckpointComplete(checkpointId);
        }

        @Override
        public void close() throws Exception {
            inner.close();
        }
    }
}
