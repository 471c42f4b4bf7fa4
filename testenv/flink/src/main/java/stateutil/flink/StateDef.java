package stateutil.flink;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/**
 * One keyed state of a job: its descriptor (fixed, so the job, its restore and the State
 * Processor API agree) and how to read and encode it for the dump.
 */
public final class StateDef implements Serializable {
    private static final long serialVersionUID = 1L;

    public enum Kind { VALUE, LIST, MAP, REDUCING, AGGREGATING }

    public final String name;
    public final Kind kind;
    public final StateDescriptor<?, ?> desc;
    /** Value type: the value, list element, map value, reduced value or accumulator. */
    public final TypeInformation<?> type;
    /** Map key type (MAP only). */
    public final TypeInformation<?> mapKeyType;
    public final boolean ttl;

    private StateDef(String name, Kind kind, StateDescriptor<?, ?> desc, TypeInformation<?> type,
            TypeInformation<?> mapKeyType, boolean ttl) {
        this.name = name;
        this.kind = kind;
        this.desc = desc;
        this.type = type;
        this.mapKeyType = mapKeyType;
        this.ttl = ttl;
    }

    /** Descriptor names that differ from the states' names in the job (--rename-state). */
    private static final Map<String, String> DESCRIPTOR_NAMES = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * States named from are declared with descriptor name to from now on: the job as it would
     * be once its descriptor was renamed. Dump lines name the descriptor.
     */
    public static void renameDescriptor(String from, String to) {
        DESCRIPTOR_NAMES.put(from, to);
    }

    /** The descriptor name of the job's state named name, keyed or operator state. */
    public static String descName(String name) {
        return DESCRIPTOR_NAMES.getOrDefault(name, name);
    }

    public static <T> StateDef value(String name, TypeInformation<T> t) {
        return new StateDef(name, Kind.VALUE, new ValueStateDescriptor<>(descName(name), t), t, null, false);
    }

    public static <T> StateDef list(String name, TypeInformation<T> t) {
        return new StateDef(name, Kind.LIST, new ListStateDescriptor<>(descName(name), t), t, null, false);
    }

    public static <K, V> StateDef map(String name, TypeInformation<K> kt, TypeInformation<V> vt) {
        return new StateDef(name, Kind.MAP, new MapStateDescriptor<>(descName(name), kt, vt), vt, kt, false);
    }

    public static <T> StateDef reducing(String name, ReduceFunction<T> f, TypeInformation<T> t) {
        return new StateDef(name, Kind.REDUCING, new ReducingStateDescriptor<>(descName(name), f, t), t, null, false);
    }

    /** The aggregate function's result must be its accumulator, so get() shows what is stored. */
    public static <IN, ACC> StateDef aggregating(String name, AggregateFunction<IN, ACC, ACC> f, TypeInformation<ACC> acc) {
        return new StateDef(name, Kind.AGGREGATING, new AggregatingStateDescriptor<>(descName(name), f, acc), acc, null, false);
    }

    /** Same state with time-to-live. */
    public StateDef withTtl(StateTtlConfig cfg) {
        desc.enableTimeToLive(cfg);
        return new StateDef(name, kind, desc, type, mapKeyType, true);
    }

    @SuppressWarnings("unchecked")
    public <S extends State> StateDescriptor<S, ?> descriptor() {
        return (StateDescriptor<S, ?>) desc;
    }

    /** Gets (registers) this state through a function's runtime context. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public State get(RuntimeContext store) {
        switch (kind) {
            case VALUE: return store.getState((ValueStateDescriptor) desc);
            case LIST: return store.getListState((ListStateDescriptor) desc);
            case MAP: return store.getMapState((MapStateDescriptor) desc);
            case REDUCING: return store.getReducingState((ReducingStateDescriptor) desc);
            default: return store.getAggregatingState((AggregatingStateDescriptor) desc);
        }
    }

    /** The state's raw value for the current key: null when it has none. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Object read(State s) throws Exception {
        switch (kind) {
            case VALUE: return ((ValueState) s).value();
            case LIST: {
                Iterable<?> it = (Iterable<?>) ((ListState) s).get();
                if (it == null) {
                    return null;
                }
                List<Object> l = new ArrayList<>();
                it.forEach(l::add);
                return l.isEmpty() ? null : l;
            }
            case MAP: {
                Iterable<Map.Entry<?, ?>> it = (Iterable<Map.Entry<?, ?>>) ((MapState) s).entries();
                if (it == null) {
                    return null;
                }
                Map<Object, Object> m = new java.util.LinkedHashMap<>();
                for (Map.Entry<?, ?> e : it) {
                    m.put(e.getKey(), e.getValue());
                }
                return m.isEmpty() ? null : m;
            }
            case REDUCING: return ((ReducingState) s).get();
            default: return ((AggregatingState) s).get();
        }
    }

    /** Encodes a raw value as read() returns it. */
    @SuppressWarnings("unchecked")
    public Object encode(Object raw) {
        switch (kind) {
            case LIST: {
                List<Object> out = new ArrayList<>();
                for (Object e : (List<Object>) raw) {
                    out.add(Json.enc(e, type));
                }
                return out;
            }
            case MAP: return Json.map((Map<?, ?>) raw, mapKeyType, type);
            default: return Json.enc(raw, type);
        }
    }

    /** A dump line for this state, or null if raw is null. */
    public TreeMap<String, Object> line(String operator, Object encodedKey, Object raw) {
        if (raw == null) {
            return null;
        }
        TreeMap<String, Object> m = Dumps.keyed(kind.name().toLowerCase(), encodedKey, operator, desc.getName(), encode(raw));
        if (ttl) {
            m.put("ttl", true);
        }
        return m;
    }
}
