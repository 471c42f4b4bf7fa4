package stateutil.flink;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;

/** A sink that makes its writers from the newer writer context only (1.x still declares the older one). */
public abstract class SinkBase<T> implements Sink<T> {
    private static final long serialVersionUID = 1L;

    @SuppressWarnings("deprecation")
    @Override
    public SinkWriter<T> createWriter(Sink.InitContext context) {
        throw new UnsupportedOperationException("this sink is made with a WriterInitContext");
    }
}
