package stateutil.flink;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.state.api.functions.KeyedStateBootstrapFunction;

/** A State Processor API keyed bootstrap function whose states are registered in setup(). */
public abstract class SpaWriterBase<K, IN> extends KeyedStateBootstrapFunction<K, IN> {
    private static final long serialVersionUID = 1L;

    protected abstract void setup(RuntimeContext ctx) throws Exception;

    @Override
    public void open(org.apache.flink.api.common.functions.OpenContext openContext) throws Exception {
        setup(getRuntimeContext());
    }
}
