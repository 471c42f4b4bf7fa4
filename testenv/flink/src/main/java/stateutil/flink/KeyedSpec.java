package stateutil.flink;

import java.io.Serializable;
import java.util.List;

import org.apache.flink.api.common.typeinfo.TypeInformation;

/** A keyed operator of a job: its uid, key type and keyed states. */
public final class KeyedSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    public final String uid;
    public final TypeInformation<?> keyType;
    public final List<StateDef> states;
    /** Whether its function registers timers (dumped as kind "timer"). */
    public final boolean timers;

    public KeyedSpec(String uid, TypeInformation<?> keyType, List<StateDef> states, boolean timers) {
        this.uid = uid;
        this.keyType = keyType;
        this.states = states;
        this.timers = timers;
    }

    public StateDef state(String name) {
        for (StateDef d : states) {
            if (d.name.equals(name)) {
                return d;
            }
        }
        throw new IllegalArgumentException("no state " + name + " in " + uid);
    }

    public Object key(Object k) {
        return Json.enc(k, keyType);
    }
}
