package stateutil.flink;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A FLIP-27 source of the record numbers 0..records-1, cut into n partitions (splits):
 * partition i holds the numbers r with r % n == i, in increasing order, and goes to reader
 * i % parallelism. Jobs derive keys so that one key's records all come from one partition,
 * which keeps per-key order (list state, "last value" state) deterministic.
 *
 * <p>While snapshotting it is unbounded: once its splits are read it idles, so the job keeps
 * running (with its state) until the harness takes the snapshot. After a restore it reads
 * nothing and ends as soon as its splits are known, so the job drains (a final watermark fires
 * every event-time timer) and finishes. Its reader state (split state, "SourceReaderState")
 * and enumerator state (coordinator state) are part of every snapshot; the reader dumps its
 * split state as the exact bytes Flink stores.
 */
public final class PartitionSource implements Source<Long, PartitionSource.Split, PartitionSource.EnumState> {
    private static final long serialVersionUID = 1L;
    /** Name of the source operator's split state (Flink's). */
    public static final String STATE_NAME = "SourceReaderState";

    private final String uid;
    private final long records;
    private final int partitions;

    public PartitionSource(String uid, long records, int partitions) {
        this.uid = uid;
        this.records = records;
        this.partitions = partitions;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SplitEnumerator<Split, EnumState> createEnumerator(SplitEnumeratorContext<Split> ctx) {
        List<Split> splits = new ArrayList<>();
        if (Dumps.mode == Dumps.Mode.SNAPSHOT) {
            for (int i = 0; i < partitions; i++) {
                splits.add(new Split(i, partitions, i, records));
            }
        }
        return new Enumerator(ctx, new EnumState(splits, partitions));
    }

    @Override
    public SplitEnumerator<Split, EnumState> restoreEnumerator(SplitEnumeratorContext<Split> ctx, EnumState state) {
        return new Enumerator(ctx, state);
    }

    @Override
    public SimpleVersionedSerializer<Split> getSplitSerializer() {
        return new SplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<EnumState> getEnumeratorCheckpointSerializer() {
        return new EnumStateSerializer();
    }

    @Override
    public SourceReader<Long, Split> createReader(SourceReaderContext ctx) {
        return new Reader(uid, ctx.getIndexOfSubtask());
    }

    /** One partition: records next, next+stride, ... below end. */
    public static final class Split implements SourceSplit {
        final int partition;
        final int stride;
        long next;
        final long end;

        Split(int partition, int stride, long next, long end) {
            this.partition = partition;
            this.stride = stride;
            this.next = next;
            this.end = end;
        }

        @Override
        public String splitId() {
            return "partition-" + partition;
        }
    }

    /** Enumerator state: splits not handed out yet, and how many partitions there are. */
    public static final class EnumState {
        final List<Split> unassigned;
        final int partitions;

        EnumState(List<Split> unassigned, int partitions) {
            this.unassigned = unassigned;
            this.partitions = partitions;
        }
    }

    static final class SplitSerializer implements SimpleVersionedSerializer<Split> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Split s) throws IOException {
            ByteArrayOutputStream bo = new ByteArrayOutputStream(20);
            DataOutputStream o = new DataOutputStream(bo);
            o.writeInt(s.partition);
            o.writeInt(s.stride);
            o.writeLong(s.next);
            o.writeLong(s.end);
            o.flush();
            return bo.toByteArray();
        }

        @Override
        public Split deserialize(int version, byte[] b) throws IOException {
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(b));
            return new Split(in.readInt(), in.readInt(), in.readLong(), in.readLong());
        }
    }

    static final class EnumStateSerializer implements SimpleVersionedSerializer<EnumState> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(EnumState s) throws IOException {
            ByteArrayOutputStream bo = new ByteArrayOutputStream();
            DataOutputStream o = new DataOutputStream(bo);
            o.writeInt(s.partitions);
            o.writeInt(s.unassigned.size());
            SplitSerializer ss = new SplitSerializer();
            for (Split sp : s.unassigned) {
                byte[] b = ss.serialize(sp);
                o.writeInt(b.length);
                o.write(b);
            }
            o.flush();
            return bo.toByteArray();
        }

        @Override
        public EnumState deserialize(int version, byte[] b) throws IOException {
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(b));
            int partitions = in.readInt();
            int n = in.readInt();
            List<Split> splits = new ArrayList<>(n);
            SplitSerializer ss = new SplitSerializer();
            for (int i = 0; i < n; i++) {
                byte[] sb = new byte[in.readInt()];
                in.readFully(sb);
                splits.add(ss.deserialize(1, sb));
            }
            return new EnumState(splits, partitions);
        }
    }

    static final class Enumerator implements SplitEnumerator<Split, EnumState> {
        private final SplitEnumeratorContext<Split> ctx;
        private final List<Split> unassigned;
        private final int partitions;

        Enumerator(SplitEnumeratorContext<Split> ctx, EnumState state) {
            this.ctx = ctx;
            this.unassigned = new ArrayList<>(state.unassigned);
            this.partitions = state.partitions;
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int subtask, String host) {}

        @Override
        public void addSplitsBack(List<Split> splits, int subtask) {
            unassigned.addAll(splits);
        }

        @Override
        public void addReader(int subtask) {
            // Deterministic: partition i always goes to reader i % parallelism.
            List<Split> mine = new ArrayList<>();
            int p = ctx.currentParallelism();
            unassigned.removeIf(s -> {
                if (s.partition % p == subtask) {
                    mine.add(s);
                    return true;
                }
                return false;
            });
            if (!mine.isEmpty()) {
                ctx.assignSplits(new org.apache.flink.api.connector.source.SplitsAssignment<>(
                        java.util.Map.of(subtask, mine)));
            }
            if (Dumps.mode != Dumps.Mode.SNAPSHOT) {
                ctx.signalNoMoreSplits(subtask);
            }
        }

        @Override
        public EnumState snapshotState(long checkpointId) {
            return new EnumState(new ArrayList<>(unassigned), partitions);
        }

        @Override
        public void close() {}
    }

    static final class Reader implements SourceReader<Long, Split> {
        private final String uid;
        private final int subtask;
        private final ArrayDeque<Split> splits = new ArrayDeque<>();
        private final List<Split> done = new ArrayList<>();
        private final SplitSerializer serializer = new SplitSerializer();
        private CompletableFuture<Void> available = new CompletableFuture<>();
        private boolean noMoreSplits;

        Reader(String uid, int subtask) {
            this.uid = uid;
            this.subtask = subtask;
        }

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<Long> out) {
            if (Dumps.mode != Dumps.Mode.RESTORE) {
                Split s = splits.peek();
                while (s != null && s.next >= s.end) {
                    done.add(splits.poll());
                    s = splits.peek();
                }
                if (s != null) {
                    // Each split emits through its own output, so that a job's event-time
                    // watermark is the minimum over all splits, including those not read
                    // yet (no record of a later split is late).
                    for (Split each : splits) {
                        out.createOutputForSplit(each.splitId());
                    }
                    SourceOutput<Long> so = out.createOutputForSplit(s.splitId());
                    // A batch per call keeps the mailbox responsive and the rate high.
                    long i = s.next;
                    for (int n = 0; n < 1024 && i < s.end; n++, i += s.stride) {
                        so.collect(i);
                    }
                    s.next = i;
                    return InputStatus.MORE_AVAILABLE;
                }
                if (Dumps.mode == Dumps.Mode.CONTINUE && noMoreSplits) {
                    return InputStatus.END_OF_INPUT;
                }
            } else if (noMoreSplits) {
                return InputStatus.END_OF_INPUT;
            }
            if (available.isDone()) {
                available = new CompletableFuture<>();
            }
            return InputStatus.NOTHING_AVAILABLE;
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            List<Split> all = new ArrayList<>(done);
            all.addAll(splits);
            for (Split s : all) {
                Dumps.snapshotLine(checkpointId, line(s));
            }
            return all;
        }

        private java.util.TreeMap<String, Object> line(Split s) {
            try {
                byte[] b = SimpleVersionedSerialization.writeVersionAndSerialize(serializer, s);
                return Dumps.operator("split", uid, STATE_NAME, subtask, Json.hex(b));
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return available;
        }

        @Override
        public void addSplits(List<Split> added) {
            if (Dumps.mode == Dumps.Mode.RESTORE) {
                for (Split s : added) {
                    Dumps.restoreLine(line(s));
                }
                done.addAll(added);
            } else if (Dumps.mode == Dumps.Mode.CONTINUE) {
                // Read on from where the snapshot left each partition, to the new end.
                for (Split s : added) {
                    splits.add(new Split(s.partition, s.stride, s.next, Math.max(s.end, Dumps.continueTo)));
                }
            } else {
                splits.addAll(added);
            }
            available.complete(null);
        }

        @Override
        public void notifyNoMoreSplits() {
            noMoreSplits = true;
            available.complete(null);
        }

        @Override
        public void close() {}
    }
}
