package stateutil.flink;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;

/** A State Processor API keyed reader whose states are registered in setup() (open() differs between 1.x and 2.x). */
public abstract class SpaReaderBase<K, OUT> extends KeyedStateReaderFunction<K, OUT> {
    private static final long serialVersionUID = 1L;

    protected abstract void setup(RuntimeContext ctx) throws Exception;

    @Override
    public void open(org.apache.flink.configuration.Configuration parameters) throws Exception {
        setup(getRuntimeContext());
    }
}
