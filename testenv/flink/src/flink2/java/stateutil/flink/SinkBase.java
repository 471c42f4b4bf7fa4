package stateutil.flink;

import org.apache.flink.api.connector.sink2.Sink;

/** A sink that makes its writers from the writer context (the only one in 2.x). */
public abstract class SinkBase<T> implements Sink<T> {
    private static final long serialVersionUID = 1L;
}
