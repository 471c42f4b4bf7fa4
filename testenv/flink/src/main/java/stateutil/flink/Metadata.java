package stateutil.flink;

import java.io.DataInputStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.AbstractChannelStateHandle;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.OperatorBackendSerializationProxy;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.StateObject;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.CompletedCheckpointStorageLocation;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateBackendHandle;
import org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess;

/** Facts about a written snapshot, read with Flink's own metadata reader. */
final class Metadata {
    private Metadata() {}

    static CheckpointMetadata load(String pointer) throws Exception {
        CompletedCheckpointStorageLocation loc = AbstractFsCheckpointStorageAccess.resolveCheckpointPointer(pointer);
        try (DataInputStream in = new DataInputStream(loc.getMetadataHandle().openInputStream())) {
            return Checkpoints.loadCheckpointMetadata(in, Metadata.class.getClassLoader(), pointer);
        }
    }

    /**
     * The keyed state meta infos the snapshot records for an operator (union over its
     * subtasks, by name), read with Flink's KeyedBackendSerializationProxy from the head of a
     * full snapshot's state file or from an incremental handle's meta data file.
     */
    static List<StateMetaInfoSnapshot> keyedStateMetaInfos(String pointer, OperatorID id) throws Exception {
        Map<String, StateMetaInfoSnapshot> byName = new LinkedHashMap<>();
        for (OperatorState os : load(pointer).getOperatorStates()) {
            if (!os.getOperatorID().equals(id)) {
                continue;
            }
            for (OperatorSubtaskState ss : os.getStates()) {
                for (KeyedStateHandle h : ss.getManagedKeyedState()) {
                    StreamStateHandle meta;
                    if (h instanceof KeyGroupsStateHandle) {
                        meta = ((KeyGroupsStateHandle) h).getDelegateStateHandle();
                    } else if (h instanceof IncrementalRemoteKeyedStateHandle) {
                        meta = Compat.metaStateHandle((IncrementalRemoteKeyedStateHandle) h);
                    } else {
                        throw new IllegalStateException("keyed state handle " + h.getClass().getName() + " is not read for meta infos");
                    }
                    try (DataInputStream in = new DataInputStream(meta.openInputStream())) {
                        KeyedBackendSerializationProxy<?> proxy = new KeyedBackendSerializationProxy<>(Metadata.class.getClassLoader());
                        proxy.read(new DataInputViewStreamWrapper(in));
                        for (StateMetaInfoSnapshot m : proxy.getStateMetaInfoSnapshots()) {
                            byName.putIfAbsent(m.getName(), m);
                        }
                    }
                }
            }
        }
        return new ArrayList<>(byName.values());
    }

    /**
     * The operator and broadcast state meta infos the snapshot records for an operator (union
     * over its subtasks, by name), read with Flink's OperatorBackendSerializationProxy from the
     * head of each managed operator state file.
     */
    static List<StateMetaInfoSnapshot> operatorStateMetaInfos(String pointer, OperatorID id) throws Exception {
        Map<String, StateMetaInfoSnapshot> byName = new LinkedHashMap<>();
        for (OperatorState os : load(pointer).getOperatorStates()) {
            if (!os.getOperatorID().equals(id)) {
                continue;
            }
            for (OperatorSubtaskState ss : os.getStates()) {
                for (OperatorStateHandle h : ss.getManagedOperatorState()) {
                    try (DataInputStream in = new DataInputStream(h.getDelegateStateHandle().openInputStream())) {
                        OperatorBackendSerializationProxy proxy = new OperatorBackendSerializationProxy(Metadata.class.getClassLoader());
                        proxy.read(new DataInputViewStreamWrapper(in));
                        for (StateMetaInfoSnapshot m : proxy.getOperatorStateMetaInfoSnapshots()) {
                            byName.putIfAbsent(m.getName(), m);
                        }
                        for (StateMetaInfoSnapshot m : proxy.getBroadcastStateMetaInfoSnapshots()) {
                            byName.putIfAbsent(m.getName(), m);
                        }
                    }
                }
            }
        }
        return new ArrayList<>(byName.values());
    }

    /**
     * An "error" line (operator: its id) for each state of the snapshot whose serializer
     * snapshots Flink cannot restore, as a restore restores them one by one for its state
     * backends (StateSerializerProvider's previous serializer: TypeSerializerSnapshot's
     * restoreSerializer), with Flink's root cause; state "*" where an operator's state meta
     * data does not read at all (then its states are not told apart). Keyed state is read
     * from full snapshots' and RocksDB's meta data; a change log's is not read.
     */
    static List<String> unrestorable(String pointer) throws Exception {
        Map<String, String> lines = new LinkedHashMap<>();
        for (OperatorState os : load(pointer).getOperatorStates()) {
            String op = os.getOperatorID().toHexString();
            for (OperatorSubtaskState ss : os.getStates()) {
                List<StreamStateHandle> keyed = new ArrayList<>();
                for (KeyedStateHandle h : ss.getManagedKeyedState()) {
                    if (h instanceof KeyGroupsStateHandle) {
                        keyed.add(((KeyGroupsStateHandle) h).getDelegateStateHandle());
                    } else if (h instanceof IncrementalRemoteKeyedStateHandle) {
                        keyed.add(Compat.metaStateHandle((IncrementalRemoteKeyedStateHandle) h));
                    }
                }
                for (StreamStateHandle meta : keyed) {
                    List<StateMetaInfoSnapshot> metas;
                    try (DataInputStream in = new DataInputStream(meta.openInputStream())) {
                        KeyedBackendSerializationProxy<?> proxy = new KeyedBackendSerializationProxy<>(Metadata.class.getClassLoader());
                        proxy.read(new DataInputViewStreamWrapper(in));
                        metas = proxy.getStateMetaInfoSnapshots();
                    } catch (Exception | LinkageError e) {
                        lines.putIfAbsent(op + "\n*", Json.render(Dumps.error(op, "*", Harness.rootMessage(e))));
                        continue;
                    }
                    restoreEach(op, metas, lines);
                }
                for (OperatorStateHandle h : ss.getManagedOperatorState()) {
                    try (DataInputStream in = new DataInputStream(h.getDelegateStateHandle().openInputStream())) {
                        OperatorBackendSerializationProxy proxy = new OperatorBackendSerializationProxy(Metadata.class.getClassLoader());
                        proxy.read(new DataInputViewStreamWrapper(in));
                        restoreEach(op, proxy.getOperatorStateMetaInfoSnapshots(), lines);
                        restoreEach(op, proxy.getBroadcastStateMetaInfoSnapshots(), lines);
                    } catch (Exception | LinkageError e) {
                        lines.putIfAbsent(op + "\n*", Json.render(Dumps.error(op, "*", Harness.rootMessage(e))));
                    }
                }
            }
        }
        return new ArrayList<>(lines.values());
    }

    private static void restoreEach(String op, List<StateMetaInfoSnapshot> metas, Map<String, String> lines) {
        for (StateMetaInfoSnapshot m : metas) {
            for (org.apache.flink.api.common.typeutils.TypeSerializerSnapshot<?> s : m.getSerializerSnapshotsImmutable().values()) {
                try {
                    s.restoreSerializer();
                } catch (Exception | LinkageError e) {
                    lines.putIfAbsent(op + "\n" + m.getName(), Json.render(Dumps.error(op, m.getName(), Harness.rootMessage(e))));
                }
            }
        }
    }

    /** Whether the snapshot's keyed state is the changelog backend's (a change log, not key groups). */
    static boolean changelog(String pointer) throws Exception {
        return changelogMaterialized(pointer) != null;
    }

    /**
     * The keyed states a restored heap backend holds (under the changelog backend, which
     * replayed its change log into it): what the snapshot records, when its state is a change
     * log whose meta data is not at the head of a file.
     */
    @SuppressWarnings("unchecked")
    static List<StateMetaInfoSnapshot> registeredStates(org.apache.flink.runtime.state.KeyedStateBackend<?> backend) throws Exception {
        Object b = backend;
        if (b instanceof org.apache.flink.runtime.state.TestableKeyedStateBackend) {
            b = ((org.apache.flink.runtime.state.TestableKeyedStateBackend<?>) b).getDelegatedKeyedStateBackend(true);
        }
        if (!(b instanceof org.apache.flink.runtime.state.heap.HeapKeyedStateBackend)) {
            throw new IllegalStateException("keyed backend " + b.getClass().getName() + " under the changelog backend is not read for meta infos");
        }
        List<StateMetaInfoSnapshot> out = new ArrayList<>();
        for (Object table : ((Map<String, Object>) field(b, "registeredKVStates")).values()) {
            out.add(((org.apache.flink.runtime.state.heap.StateTable<?, ?, ?>) table).getMetaInfo().snapshot());
        }
        for (Object pq : ((org.apache.flink.runtime.state.HeapPriorityQueuesManager) field(b, "priorityQueuesManager")).getRegisteredPQStates().values()) {
            out.add(((org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper<?>) pq).getMetaInfo().snapshot());
        }
        return out;
    }

    private static Object field(Object o, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }

    /** The channel state handles (records in flight of an unaligned checkpoint) the snapshot holds. */
    static long channelStateHandles(String pointer) throws Exception {
        long n = 0;
        for (OperatorState os : load(pointer).getOperatorStates()) {
            for (OperatorSubtaskState ss : os.getStates()) {
                n += ss.getInputChannelState().size() + ss.getResultSubpartitionState().size();
            }
        }
        return n;
    }

    /**
     * The bytes of the records in flight that the snapshot's channel state holds, read as Flink
     * reads them on restore: at each of a channel's offsets into its stream, the length of a
     * buffer (ChannelStateSerializerImpl's readLength). A handle can hold only empty buffers: an
     * unaligned checkpoint may list channels that had nothing in them.
     */
    static long inFlightBytes(String pointer) throws Exception {
        java.lang.reflect.Constructor<?> make = Class.forName("org.apache.flink.runtime.checkpoint.channel.ChannelStateSerializerImpl")
                .getDeclaredConstructor();
        make.setAccessible(true);
        Object serializer = make.newInstance();
        java.lang.reflect.Method readLength = serializer.getClass().getMethod("readLength", java.io.InputStream.class);
        readLength.setAccessible(true);
        long n = 0;
        for (OperatorState os : load(pointer).getOperatorStates()) {
            for (OperatorSubtaskState ss : os.getStates()) {
                List<StateObject> handles = new ArrayList<>(ss.getInputChannelState());
                handles.addAll(ss.getResultSubpartitionState());
                for (StateObject h : handles) {
                    for (AbstractChannelStateHandle<?> c : channelHandles(h)) {
                        try (FSDataInputStream in = c.getDelegate().openInputStream()) {
                            for (long offset : c.getOffsets()) {
                                in.seek(offset);
                                n += (Integer) readLength.invoke(serializer, in);
                            }
                        }
                    }
                }
            }
        }
        return n;
    }

    /** A channel state handle as one handle a channel: Flink 2 merges a subtask's into one. */
    @SuppressWarnings("unchecked")
    private static Collection<AbstractChannelStateHandle<?>> channelHandles(StateObject h) throws ReflectiveOperationException {
        if (h instanceof AbstractChannelStateHandle) {
            return List.of((AbstractChannelStateHandle<?>) h);
        }
        for (Class<?> c = h.getClass(); c != null; c = c.getSuperclass()) {
            try {
                java.lang.reflect.Method unmerged = c.getDeclaredMethod("getUnmergedHandles");
                unmerged.setAccessible(true);
                return (Collection<AbstractChannelStateHandle<?>>) unmerged.invoke(h);
            } catch (NoSuchMethodException e) {
                // a superclass declares it
            }
        }
        throw new IllegalStateException("channel state handle " + h.getClass().getName() + " is neither one channel's nor merged channels'");
    }

    /** Whether the snapshot holds RocksDB's native keyed state (a native savepoint or checkpoint of RocksDB). */
    static boolean rocksDbNative(String pointer) throws Exception {
        for (OperatorState os : load(pointer).getOperatorStates()) {
            for (OperatorSubtaskState ss : os.getStates()) {
                for (KeyedStateHandle h : ss.getManagedKeyedState()) {
                    if (h instanceof ChangelogStateBackendHandle) {
                        for (KeyedStateHandle m : ((ChangelogStateBackendHandle) h).getMaterializedStateHandles()) {
                            if (m instanceof org.apache.flink.runtime.state.IncrementalKeyedStateHandle) {
                                return true;
                            }
                        }
                    }
                    if (h instanceof org.apache.flink.runtime.state.IncrementalKeyedStateHandle) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * Whether the snapshot's changelog keyed handles have a materialised part: true if any has,
     * false if none has, null if the snapshot has no changelog handle at all (a canonical
     * savepoint of a changelog job is written by the nested backend).
     */
    static Boolean changelogMaterialized(String pointer) throws Exception {
        Boolean any = null;
        for (OperatorState os : load(pointer).getOperatorStates()) {
            for (OperatorSubtaskState ss : os.getStates()) {
                for (KeyedStateHandle h : ss.getManagedKeyedState()) {
                    if (h instanceof ChangelogStateBackendHandle) {
                        boolean m = !((ChangelogStateBackendHandle) h).getMaterializedStateHandles().isEmpty();
                        any = (any != null && any) || m;
                    }
                }
            }
        }
        return any;
    }
}
