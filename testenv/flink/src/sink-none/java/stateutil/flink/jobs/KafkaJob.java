package stateutil.flink.jobs;

import java.util.List;
import java.util.Map;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import stateutil.flink.Job;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;

/** Before Flink 1.18 the harness has no sink layer for the connector jobs: the kafka job is not available. */
public final class KafkaJob implements Job {
    @Override
    public String name() {
        return "kafka";
    }

    @Override
    public List<KeyedSpec> keyed(Params p) {
        return List.of();
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of();
    }

    @Override
    public Map<String, Long> expected(Params p) {
        return Map.of();
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        throw new UnsupportedOperationException("the kafka job runs on Flink 1.18 or later (the harness has no sink layer before)");
    }
}
