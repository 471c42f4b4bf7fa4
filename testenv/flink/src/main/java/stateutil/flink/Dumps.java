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

    /** What the running job is for. */
    public enum Mode { SNAPSHOT, RESTORE }

    public static volatile Mode mode = Mode.SNAPSHOT;
    /** False when the caller wants no dump (benchmark snapshots): keyed state is not listed. */
    public static volatile boolean collectKeyed = true;
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

    public static AtomicLong counter(String name) {
        return COUNTERS.computeIfAbsent(name, k -> new AtomicLong());
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
