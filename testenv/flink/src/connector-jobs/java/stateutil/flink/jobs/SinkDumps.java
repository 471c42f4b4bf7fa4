package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

import stateutil.flink.Dumps;
import stateutil.flink.Json;

/**
 * What a DumpingSink's writer dumps while Flink snapshots it, whichever sink API the Flink
 * version has (src/sink-twophase: 1.18; src/sink-v2: 1.19 on): the states it hands to Flink
 * (writer state "writer_raw_states") and the committables it handed to the committer for that
 * checkpoint (committer state "streaming_committer_raw_states" of its subtask). The
 * committer's bookkeeping around them (checkpoint id, subtask, counts, serializer versions) is
 * what Flink's CommittableCollector stores for committables received and not yet committed.
 */
final class SinkDumps {
    private SinkDumps() {}

    static <S, C> void snapshot(DumpingSink<S, C> sink, long checkpointId, int subtask, List<S> states, List<C> prepared) {
        for (S s : states) {
            Dumps.line(checkpointId, Dumps.operator("split", sink.uid, "writer_raw_states", subtask, sink.stateJson(s)));
        }
        Dumps.line(checkpointId, Dumps.operator("split", "Sink Committer: " + sink.uid, "streaming_committer_raw_states", subtask,
                collectorJson(sink, checkpointId, subtask, prepared)));
    }

    private static <S, C> Object collectorJson(DumpingSink<S, C> sink, long checkpointId, int subtask, List<C> committables) {
        int version = sink.getCommittableSerializer().getVersion();
        List<Object> requests = new ArrayList<>();
        for (C c : committables) {
            TreeMap<String, Object> q = Json.obj();
            q.put("committable", sink.committableJson(c, version));
            q.put("numberOfRetries", 0L);
            q.put("state", 0L); // CommitRequestState.RECEIVED
            requests.add(q);
        }
        // The serializer versions: 1.18 writes checkpoints and subtasks as version 0 (no number of
        // subtasks, no subtask id); 1.19 added them (version 1 each); 2.0 dropped the drained
        // count (subtask version 2).
        long subtaskVersion = DumpingSink.COLLECTOR_SUBTASK_VERSION;
        TreeMap<String, Object> sub = Json.obj();
        if (subtaskVersion >= 1) {
            sub.put("subtaskId", (long) subtask);
        }
        sub.put("requestsVersion", 0L);
        sub.put("requests", requests);
        sub.put("numCommittables", (long) committables.size());
        if (subtaskVersion <= 1) {
            sub.put("numDrained", 0L);
        }
        sub.put("numFailed", 0L);
        TreeMap<String, Object> cp = Json.obj();
        cp.put("checkpointId", checkpointId);
        if (DumpingSink.COLLECTOR_CHECKPOINT_VERSION >= 1) {
            cp.put("numberOfSubtasks", (long) sink.parallelism);
        }
        cp.put("subtasksVersion", subtaskVersion);
        cp.put("subtasks", List.of(sub));
        TreeMap<String, Object> m = Json.obj();
        m.put("@committerState", "CommittableCollector");
        m.put("checkpointsVersion", DumpingSink.COLLECTOR_CHECKPOINT_VERSION);
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
