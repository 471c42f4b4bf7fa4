package stateutil.flink;

import java.time.Duration;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.StateTtlConfig;

/** The few calls that differ between Flink 1.x and 2.x: the 2.x side. */
public final class Compat {
    private Compat() {}

    public static final int MAJOR = 2;

    public static StateTtlConfig.Builder ttl(Duration d) {
        return StateTtlConfig.newBuilder(d);
    }

    public static int subtask(RuntimeContext ctx) {
        return ctx.getTaskInfo().getIndexOfThisSubtask();
    }

    /** Flink's embedded RocksDB backend (its package moved in 2.0). */
    public static org.apache.flink.runtime.state.StateBackend rocksdb() {
        return new org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend();
    }

    /** An incremental handle's meta data file. */
    public static org.apache.flink.runtime.state.StreamStateHandle metaStateHandle(
            org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle h) {
        return h.getMetaDataStateHandle();
    }

    /** A tumbling event-time window assigner. */
    public static org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows tumbling(Duration size) {
        return org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows.of(size);
    }

    /** A sliding event-time window assigner. */
    public static org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows sliding(Duration size, Duration slide) {
        return org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows.of(size, slide);
    }

    /** Registers a Kryo serializer for a class (the call moved to the SerializerConfig in 2.0). */
    @SuppressWarnings("rawtypes")
    public static void registerKryo(org.apache.flink.streaming.api.environment.StreamExecutionEnvironment env, Class<?> type,
            Class<? extends com.esotericsoftware.kryo.Serializer> serializer) {
        ((org.apache.flink.api.common.serialization.SerializerConfigImpl) env.getConfig().getSerializerConfig()).registerTypeWithKryoSerializer(type, serializer);
    }

    /** A sink of the records of s: a Sink (2.x has no SinkFunction). */
    public static <T> org.apache.flink.streaming.api.datastream.DataStreamSink<T> sinkTo(
            org.apache.flink.streaming.api.datastream.DataStream<T> s, RecordSink<T> sink) {
        return s.sinkTo(new SinkOf<>(sink));
    }

    static final class SinkOf<T> extends SinkBase<T> {
        private static final long serialVersionUID = 1L;
        private final RecordSink<T> sink;

        SinkOf(RecordSink<T> sink) {
            this.sink = sink;
        }

        @Override
        public org.apache.flink.api.connector.sink2.SinkWriter<T> createWriter(org.apache.flink.api.connector.sink2.WriterInitContext context) {
            return new org.apache.flink.api.connector.sink2.SinkWriter<T>() {
                @Override
                public void write(T value, Context ctx) throws java.io.IOException {
                    sink.write(value);
                }

                @Override
                public void flush(boolean endOfInput) throws java.io.IOException {
                    if (endOfInput) {
                        sink.end();
                    }
                }

                @Override
                public void close() throws java.io.IOException {
                    sink.close();
                }
            };
        }
    }
}
