package stateutil.flink;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.OperatorStateBackend;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Dumps, after Flink restored it, every keyed state, timer and operator state that the snapshot records for
 * this operator's id, with the serializers the snapshot names (restored from their serializer
 * snapshots): the state of operators whose descriptors a test cannot call, such as the Table
 * planner's. States are read through Flink's keyed state backend under every (key, namespace)
 * it holds, timers through Flink's timer service. It runs only in a dump view, restoring.
 */
public class RestoredStateDumper<K> extends AbstractStreamOperator<Long>
        implements OneInputStreamOperator<Object, Long>, Triggerable<K, Object> {
    private static final long serialVersionUID = 1L;
    private static final String EVENT = "_timer_state/event_", PROCESSING = "_timer_state/processing_";

    private final String uid;

    public RestoredStateDumper(String uid) {
        this.uid = uid;
    }

    @Override
    public void open() throws Exception {
        super.open();
        KeyedStateBackend<K> backend = getKeyedStateBackend();
        if (backend != null) {
            dumpKeyed(backend);
        }
        for (StateMetaInfoSnapshot m : Metadata.operatorStateMetaInfos(Dumps.viewSnapshot, getOperatorID())) {
            Dumps.guard(uid, m.getName(), () -> dumpOperatorState(m));
        }
    }

    private void dumpKeyed(KeyedStateBackend<K> backend) throws Exception {
        TypeSerializer<K> keySer = backend.getKeySerializer();
        List<StateMetaInfoSnapshot> metas = Metadata.changelog(Dumps.viewSnapshot)
                ? Metadata.registeredStates(backend) : Metadata.keyedStateMetaInfos(Dumps.viewSnapshot, getOperatorID());
        for (StateMetaInfoSnapshot m : metas) {
            String name = m.getName();
            if (m.getBackendStateType() == StateMetaInfoSnapshot.BackendStateType.PRIORITY_QUEUE) {
                boolean event = name.startsWith(EVENT);
                if (!event && !name.startsWith(PROCESSING)) {
                    throw new IllegalStateException(uid + ": priority queue state " + name + " is no timer service");
                }
                Dumps.guard(uid, name, () -> {
                    TimerSerializer<?, ?> ts = (TimerSerializer<?, ?>) m.getTypeSerializerSnapshot(
                            StateMetaInfoSnapshot.CommonSerializerKeys.VALUE_SERIALIZER).restoreSerializer();
                    dumpTimers(name.substring((event ? EVENT : PROCESSING).length()), event, ts.getNamespaceSerializer(), keySer);
                });
            } else {
                Dumps.guard(uid, name, () -> dumpState(backend, new RegisteredKeyValueStateBackendMetaInfo<>(m), keySer));
            }
        }
    }

    /** One line per element of a split or union list state, or per entry of a broadcast state. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private void dumpOperatorState(StateMetaInfoSnapshot m) throws Exception {
        String name = m.getName();
        int sub = Compat.subtask(getRuntimeContext());
        OperatorStateBackend backend = getOperatorStateBackend();
        TypeSerializer vs = m.getTypeSerializerSnapshot(StateMetaInfoSnapshot.CommonSerializerKeys.VALUE_SERIALIZER).restoreSerializer();
        if (m.getBackendStateType() == StateMetaInfoSnapshot.BackendStateType.BROADCAST) {
            TypeSerializer ks = m.getTypeSerializerSnapshot(StateMetaInfoSnapshot.CommonSerializerKeys.KEY_SERIALIZER).restoreSerializer();
            for (Map.Entry<?, ?> e : ((BroadcastState<?, ?>) backend.getBroadcastState(new MapStateDescriptor<>(name, ks, vs))).entries()) {
                TreeMap<String, Object> kv = Json.obj();
                kv.put("key", SerializerJson.enc(e.getKey(), ks));
                kv.put("value", SerializerJson.enc(e.getValue(), vs));
                Dumps.restoreLine(Dumps.operator("broadcast", uid, name, sub, kv));
            }
            return;
        }
        String mode = m.getOption(StateMetaInfoSnapshot.CommonOptionsKeys.OPERATOR_STATE_DISTRIBUTION_MODE);
        boolean union = "UNION".equals(mode);
        if (!union && !"SPLIT_DISTRIBUTE".equals(mode)) {
            throw new IllegalStateException(uid + ": operator state " + name + " has distribution mode " + mode);
        }
        ListStateDescriptor<?> desc = new ListStateDescriptor<>(name, vs);
        ListState<?> st = union ? backend.getUnionListState(desc) : backend.getListState(desc);
        for (Object e : st.get()) {
            Dumps.restoreLine(Dumps.operator(union ? "union" : "split", uid, name, sub, SerializerJson.enc(e, vs)));
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private <N> void dumpState(KeyedStateBackend<K> backend, RegisteredKeyValueStateBackendMetaInfo<N, ?> info, TypeSerializer<K> keySer) throws Exception {
        String name = info.getName();
        TypeSerializer<N> nsSer = info.getNamespaceSerializer();
        TypeSerializer<?> ser = info.getStateSerializer();
        StateDescriptor desc;
        String kind;
        switch (info.getStateType()) {
            case VALUE:
                desc = new ValueStateDescriptor<>(name, ser);
                kind = "value";
                break;
            case LIST:
                desc = new ListStateDescriptor<>(name, ((ListSerializer<?>) ser).getElementSerializer());
                kind = "list";
                break;
            case MAP:
                desc = new MapStateDescriptor<>(name, ((MapSerializer<?, ?>) ser).getKeySerializer(), ((MapSerializer<?, ?>) ser).getValueSerializer());
                kind = "map";
                break;
            case REDUCING:
                // Whatever the job's function, get() gives what is stored.
                desc = new ReducingStateDescriptor<>(name, (ReduceFunction) (a, b) -> a, ser);
                kind = "reducing";
                break;
            case AGGREGATING:
                desc = new AggregatingStateDescriptor<>(name, new Stored(), ser);
                kind = "aggregating";
                break;
            default:
                throw new IllegalStateException(uid + ": state " + name + " of type " + info.getStateType() + " is not dumped");
        }
        List<Tuple2<K, N>> all = new ArrayList<>();
        try (java.util.stream.Stream<Tuple2<K, N>> s = backend.getKeysAndNamespaces(name)) {
            s.forEach(all::add);
        }
        for (Tuple2<K, N> kn : all) {
            backend.setCurrentKey(kn.f0);
            State st = backend.getPartitionedState(kn.f1, nsSer, desc);
            Object value;
            switch (kind) {
                case "value":
                    value = SerializerJson.enc(((ValueState<?>) st).value(), ser);
                    break;
                case "reducing":
                case "aggregating":
                    value = SerializerJson.enc(((org.apache.flink.api.common.state.AppendingState<?, ?>) st).get(), ser);
                    break;
                case "list": {
                    List<Object> l = new ArrayList<>();
                    for (Object e : ((ListState<?>) st).get()) {
                        l.add(e);
                    }
                    value = l.isEmpty() ? null : SerializerJson.enc(l, ser);
                    break;
                }
                default: {
                    Map<Object, Object> mm = new java.util.LinkedHashMap<>();
                    for (Map.Entry<?, ?> e : ((MapState<?, ?>) st).entries()) {
                        mm.put(e.getKey(), e.getValue());
                    }
                    value = mm.isEmpty() ? null : SerializerJson.enc(mm, ser);
                    break;
                }
            }
            if (value != null) {
                Dumps.restoreLine(line(kind, kn.f0, keySer, kn.f1, nsSer, name, value));
            }
        }
    }

    @SuppressWarnings("unchecked")
    private <N> void dumpTimers(String service, boolean event, TypeSerializer<N> nsSer, TypeSerializer<K> keySer) throws Exception {
        InternalTimerService<N> ts = getInternalTimerService(service, nsSer, (Triggerable<K, N>) (Triggerable<?, ?>) this);
        String domain = event ? "event-time" : "processing-time";
        org.apache.flink.util.function.BiConsumerWithException<N, Long, Exception> dump =
                (ns, t) -> Dumps.restoreLine(line("timer", (K) getCurrentKey(), keySer, ns, nsSer, domain, t));
        if (event) {
            ts.forEachEventTimeTimer(dump);
        } else {
            ts.forEachProcessingTimeTimer(dump);
        }
    }

    private <N> TreeMap<String, Object> line(String kind, K key, TypeSerializer<K> keySer, N ns, TypeSerializer<N> nsSer, String state, Object value) {
        TreeMap<String, Object> l = Dumps.keyed(kind, SerializerJson.enc(key, keySer), uid, state, value);
        if (!(ns instanceof org.apache.flink.runtime.state.VoidNamespace)) {
            l.put("namespace", SerializerJson.enc(ns, nsSer));
        }
        return l;
    }

    /** An aggregate function whose result is its accumulator: what an AggregatingState stores. */
    @SuppressWarnings("rawtypes")
    static final class Stored implements AggregateFunction {
        @Override
        public Object createAccumulator() {
            throw new UnsupportedOperationException("the dump only reads");
        }

        @Override
        public Object add(Object value, Object acc) {
            throw new UnsupportedOperationException("the dump only reads");
        }

        @Override
        public Object getResult(Object acc) {
            return acc;
        }

        @Override
        public Object merge(Object a, Object b) {
            throw new UnsupportedOperationException("the dump only reads");
        }
    }

    @Override
    public void processElement(StreamRecord<Object> element) {}

    @Override
    public void onEventTime(InternalTimer<K, Object> timer) {}

    @Override
    public void onProcessingTime(InternalTimer<K, Object> timer) {}
}
