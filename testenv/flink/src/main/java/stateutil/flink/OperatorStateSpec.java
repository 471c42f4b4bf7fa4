package stateutil.flink;

import java.io.Serializable;

import org.apache.flink.api.common.typeinfo.TypeInformation;

/** An operator (non-keyed) state of a job, for the State Processor API. */
public final class OperatorStateSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    public enum Mode { SPLIT, UNION, BROADCAST }

    public final String uid;
    public final String name;
    public final Mode mode;
    /** Element type (split/union) or map value type (broadcast). */
    public final TypeInformation<?> type;
    /** Broadcast map key type. */
    public final TypeInformation<?> keyType;

    public OperatorStateSpec(String uid, String name, Mode mode, TypeInformation<?> type, TypeInformation<?> keyType) {
        this.uid = uid;
        this.name = name;
        this.mode = mode;
        this.type = type;
        this.keyType = keyType;
    }
}
