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

    /** Whether any changelog keyed handle of the snapshot has a materialised part. */
    static boolean changelogMaterialized(String pointer) throws Exception {
        for (OperatorState os : load(pointer).getOperatorStates()) {
            for (OperatorSubtaskState ss : os.getStates()) {
                for (KeyedStateHandle h : ss.getManagedKeyedState()) {
                    if (h instanceof ChangelogStateBackendHandle
                            && !((ChangelogStateBackendHandle) h).getMaterializedStateHandles().isEmpty()) {
                        return true;
                    }
                }
            }
        }
        return false;
    }
}
