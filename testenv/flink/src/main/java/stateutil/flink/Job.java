package stateutil.flink;

import java.util.List;
import java.util.Map;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** A test job: the same code on every Flink version, uids on every stateful operator. */
public interface Job extends java.io.Serializable {
    String name();

    /** Adds the job's operators to env. */
    void build(StreamExecutionEnvironment env, Params p) throws Exception;

    /** Counters ({@link Dumps#counter}) that reach these values once every record is in state. */
    Map<String, Long> expected(Params p);

    /** Keyed operators and their states (for the State Processor API). */
    List<KeyedSpec> keyed(Params p) throws Exception;

    /** Operator states (for the State Processor API), sources' split state included. */
    List<OperatorStateSpec> operatorStates(Params p);

    /**
     * Jobs whose operators cannot dump themselves (Table operators) build here a job that
     * restores their keyed state under the same uids and dumps it; null if not needed.
     */
    default DumpView dumpView() {
        return null;
    }

    /** See {@link #dumpView()}. */
    interface DumpView extends java.io.Serializable {
        void build(StreamExecutionEnvironment env, Params p) throws Exception;
    }

    /** A note for the manifest (how the dump is made, if not by the operators). */
    default String dumpNote() {
        return "operators dump their own state while Flink snapshots them";
    }
}
