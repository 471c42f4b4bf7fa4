package stateutil.flink;

import java.io.DataInputStream;

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
