package stateutil.flink;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * In-process bookkeeping shared by the harness and the operators it runs. Flink's MiniCluster
 * runs every task in this JVM, and the job's classes come from the application class loader,
 * so these statics are the same objects in the operators and in {@link Harness}.
 */
public final class Dumps {
    private Dumps() {}

    /**
     * What the running job is for: writing a snapshot, dumping a restored one, or going on
     * from a restored one (the source reads on to {@link #continueTo}; the job's outputs are
     * kept, see {@link #output}).
     */
    public enum Mode { SNAPSHOT, RESTORE, CONTINUE }

    public static volatile Mode mode = Mode.SNAPSHOT;
    /** False when the caller wants no dump (benchmark snapshots): keyed state is not listed. */
    public static volatile boolean collectKeyed = true;
    /** CONTINUE: the record number the source reads on to (exclusive). */
    public static volatile long continueTo;
    /**
     * Milliseconds a keyed operator's task waits per record while a snapshot is written with
     * records in flight (--unaligned): backpressure, so that the channels hold records when
     * the checkpoint's barrier overtakes them.
     */
    public static volatile long throttleMillis;

    /** Waits {@link #throttleMillis}, if any. */
    public static void throttle() throws InterruptedException {
        long wait = throttleMillis;
        if (wait > 0) {
            Thread.sleep(wait);
        }
    }
    /**
     * restore-dump --per-state: a state that Flink fails to register or read is dumped as one
     * "error" line (its value Flink's root cause) instead of failing the job.
     */
    public static volatile boolean perState;
    /** The snapshot a dump view restores (for {@link RestoredStateDumper}). */
    public static volatile String viewSnapshot;

    /** Lines the operators dumped while Flink took snapshot N (keyed by checkpoint id). */
    private static final Map<Long, ConcurrentLinkedQueue<String>> SNAPSHOT_LINES = new ConcurrentHashMap<>();
    /** Lines the operators dumped after a restore. */
    private static final ConcurrentLinkedQueue<String> RESTORE_LINES = new ConcurrentLinkedQueue<>();
    private static final Map<String, AtomicLong> COUNTERS = new ConcurrentHashMap<>();

    public static void snapshotLine(long checkpointId, Map<String, Object> line) {
        SNAPSHOT_LINES.computeIfAbsent(checkpointId, k -> new ConcurrentLinkedQueue<>()).add(Json.render(line));
    }

    public static void restoreLine(Map<String, Object> line) {
        List<String> pending = PENDING.get();
        if (pending != null) {
            pending.add(Json.render(line));
            return;
        }
        RESTORE_LINES.add(Json.render(line));
    }

    /** Records a line for the current mode (snapshotting: for checkpoint id; restoring: id ignored). */
    public static void line(long checkpointId, Map<String, Object> line) {
        if (mode == Mode.RESTORE) {
            restoreLine(line);
        } else {
            snapshotLine(checkpointId, line);
        }
    }

    public static java.util.Set<Long> snapshotIds() {
        return new java.util.TreeSet<>(SNAPSHOT_LINES.keySet());
    }

    public static List<String> snapshotLines(long checkpointId) {
        ConcurrentLinkedQueue<String> q = SNAPSHOT_LINES.get(checkpointId);
        return q == null ? new ArrayList<>() : new ArrayList<>(q);
    }

    public static List<String> restoreLines() {
        return new ArrayList<>(RESTORE_LINES);
    }

    public static void clearRestoreLines() {
        RESTORE_LINES.clear();
    }

    /** CONTINUE: each output row (its text) with +1 for an insertion or update after, -1 for a retraction. */
    private static final Map<String, AtomicLong> OUTPUT = new ConcurrentHashMap<>();

    /** Records one output of the job while it goes on from a restored snapshot (CONTINUE). */
    public static void output(int sign, String text) {
        if (mode == Mode.CONTINUE) {
            OUTPUT.computeIfAbsent(text, k -> new AtomicLong()).addAndGet(sign);
        }
    }

    /** The outputs, as a signed multiset: text to count (zero counts left out). */
    public static Map<String, Long> outputs() {
        Map<String, Long> out = new java.util.TreeMap<>();
        OUTPUT.forEach((k, v) -> {
            if (v.get() != 0) {
                out.put(k, v.get());
            }
        });
        return out;
    }

    public static AtomicLong counter(String name) {
        return COUNTERS.computeIfAbsent(name, k -> new AtomicLong());
    }

    /**
     * Runs a state's dump; with {@link #perState}, the state's lines are followed by a
     * "dumped" line for (operator, state) (its values were listed, if any), and a failure
     * becomes an "error" line for it holding Flink's root cause, the lines the state dumped
     * before it dropped.
     */
    public static void guard(String operator, String state, DumpAction dump) throws Exception {
        if (!perState) {
            dump.run();
            return;
        }
        List<String> lines = new ArrayList<>();
        PENDING.set(lines);
        try {
            dump.run();
            TreeMap<String, Object> m = error(operator, state, null);
            m.put("kind", "dumped");
            m.put("value", true);
            lines.add(Json.render(m));
        } catch (Exception | LinkageError e) {
            lines.clear();
            lines.add(Json.render(error(operator, state, Harness.rootMessage(e))));
        } finally {
            PENDING.remove();
        }
        RESTORE_LINES.addAll(lines);
    }

    /** The lines of the state this thread is dumping under {@link #guard(String, String, DumpAction)}. */
    private static final ThreadLocal<List<String>> PENDING = new ThreadLocal<>();

    /** One state's dump (see {@link #guard(String, String, DumpAction)}). */
    public interface DumpAction {
        void run() throws Exception;
    }

    /** An "error" line: Flink failed to restore or read the state (operator: a uid or an operator id). */
    public static TreeMap<String, Object> error(String operator, String state, String message) {
        TreeMap<String, Object> m = Json.obj();
        m.put("kind", "error");
        m.put("operator", operator);
        m.put("state", state);
        m.put("value", message);
        return m;
    }

    /** A keyed-state line. */
    public static TreeMap<String, Object> keyed(String kind, Object key, String operator, String state, Object value) {
        TreeMap<String, Object> m = Json.obj();
        m.put("kind", kind);
        m.put("key", key);
        m.put("operator", operator);
        m.put("state", state);
        m.put("value", value);
        return m;
    }

    /** An operator-state line (split, union, broadcast). */
    public static TreeMap<String, Object> operator(String kind, String operator, String state, int subtask, Object value) {
        TreeMap<String, Object> m = Json.obj();
        m.put("kind", kind);
        m.put("operator", operator);
        m.put("state", state);
        m.put("subtask", (long) subtask);
        m.put("value", value);
        return m;
    }
}
