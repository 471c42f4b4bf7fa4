package stateutil.flink;

import java.util.TreeMap;

import org.apache.flink.api.common.state.State;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;

/**
 * Flink's KeyedProcessOperator, plus the dump: while Flink snapshots it (snapshotState, on the
 * task thread, before the backends write the snapshot) it lists every key of every state of
 * its {@link KeyedSpec} through the keyed state backend, and every registered timer through
 * Flink's timer service. After a restore it lists the restored state in open(), the
 * processing-time timers likewise, and each event-time timer when it fires (the job's final
 * watermark fires them all).
 */
public class DumpingKeyedOperator<K, IN, OUT> extends KeyedProcessOperator<K, IN, OUT> {
    private static final long serialVersionUID = 1L;
    /** KeyedProcessOperator's timer service name. */
    private static final String TIMERS = "user-timers";

    private final KeyedSpec spec;

    public DumpingKeyedOperator(KeyedProcessFunction<K, IN, OUT> function, KeyedSpec spec) {
        super(function);
        this.spec = spec;
    }

    @Override
    public void open() throws Exception {
        super.open();
        if (Dumps.mode == Dumps.Mode.RESTORE) {
            dumpState(-1);
            dumpTimers(-1, false);
        }
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        if (Dumps.mode == Dumps.Mode.SNAPSHOT && Dumps.collectKeyed) {
            dumpState(context.getCheckpointId());
            dumpTimers(context.getCheckpointId(), true);
        }
    }

    @Override
    public void onEventTime(InternalTimer<K, VoidNamespace> timer) throws Exception {
        if (Dumps.mode == Dumps.Mode.RESTORE && spec.timers) {
            Dumps.restoreLine(timerLine(timer.getKey(), "event-time", timer.getTimestamp()));
        }
        super.onEventTime(timer);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private void dumpState(long checkpointId) throws Exception {
        KeyedStateBackend<K> backend = getKeyedStateBackend();
        Object saved = backend.getCurrentKey();
        for (StateDef d : spec.states) {
            Dumps.guard(spec.uid, d.desc.getName(), () -> backend.applyToAllKeys(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                    (org.apache.flink.api.common.state.StateDescriptor) d.desc,
                    (key, state) -> {
                        TreeMap<String, Object> line = d.line(spec.uid, spec.key(key), d.read((State) state));
                        if (line != null) {
                            Dumps.line(checkpointId, line);
                        }
                    }));
        }
        if (saved != null) {
            backend.setCurrentKey((K) saved);
        }
    }

    @SuppressWarnings("unchecked")
    private void dumpTimers(long checkpointId, boolean eventTime) throws Exception {
        // Restored with --per-state, the timers of a function that registers none are listed
        // too (there are none), so that the dump shows its timer states restored.
        boolean none = !spec.timers && Dumps.mode == Dumps.Mode.RESTORE && Dumps.perState;
        if (!spec.timers && !none) {
            return;
        }
        InternalTimerService<VoidNamespace> ts = getInternalTimerService(TIMERS, VoidNamespaceSerializer.INSTANCE, this);
        if (eventTime) {
            ts.forEachEventTimeTimer((ns, t) -> Dumps.line(checkpointId, timerLine((K) getCurrentKey(), "event-time", t)));
        } else if (Dumps.mode == Dumps.Mode.RESTORE) {
            // Restored, the event-time timers are dumped as they fire (onEventTime).
            Dumps.guard(spec.uid, "_timer_state/event_" + TIMERS, () -> {
                if (none) {
                    ts.forEachEventTimeTimer((ns, t) -> Dumps.line(checkpointId, timerLine((K) getCurrentKey(), "event-time", t)));
                }
            });
        }
        Dumps.guard(spec.uid, "_timer_state/processing_" + TIMERS,
                () -> ts.forEachProcessingTimeTimer((ns, t) -> Dumps.line(checkpointId, timerLine((K) getCurrentKey(), "processing-time", t))));
    }

    private TreeMap<String, Object> timerLine(K key, String domain, long ts) {
        return Dumps.keyed("timer", spec.key(key), spec.uid, domain, ts);
    }
}
