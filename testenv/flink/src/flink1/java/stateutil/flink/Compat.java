package stateutil.flink;

import java.time.Duration;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.time.Time;

/** The few calls that differ between Flink 1.x and 2.x: the 1.x side (1.18 has no Duration TTL). */
public final class Compat {
    private Compat() {}

    public static final int MAJOR = 1;

    @SuppressWarnings("deprecation")
    public static StateTtlConfig.Builder ttl(Duration d) {
        return StateTtlConfig.newBuilder(Time.milliseconds(d.toMillis()));
    }

    @SuppressWarnings("deprecation")
    public static int subtask(RuntimeContext ctx) {
        return ctx.getIndexOfThisSubtask();
    }

    /** Flink's embedded RocksDB backend (its package moved in 2.0). */
    public static org.apache.flink.runtime.state.StateBackend rocksdb() {
        return new org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend();
    }

    /** An incremental handle's meta data file: getMetaStateHandle on 1.18, getMetaDataStateHandle from 1.19. */
    public static org.apache.flink.runtime.state.StreamStateHandle metaStateHandle(
            org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle h) throws ReflectiveOperationException {
        java.lang.reflect.Method m;
        try {
            m = h.getClass().getMethod("getMetaDataStateHandle");
        } catch (NoSuchMethodException e) {
            m = h.getClass().getMethod("getMetaStateHandle");
        }
        return (org.apache.flink.runtime.state.StreamStateHandle) m.invoke(h);
    }

    /** A tumbling event-time window assigner (1.18 takes only Time). */
    @SuppressWarnings("deprecation")
    public static org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows tumbling(Duration size) {
        return org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows.of(
                org.apache.flink.streaming.api.windowing.time.Time.milliseconds(size.toMillis()));
    }

    /** A sliding event-time window assigner (1.18 takes only Time). */
    @SuppressWarnings("deprecation")
    public static org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows sliding(Duration size, Duration slide) {
        return org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows.of(
                org.apache.flink.streaming.api.windowing.time.Time.milliseconds(size.toMillis()),
                org.apache.flink.streaming.api.windowing.time.Time.milliseconds(slide.toMillis()));
    }

    /** Registers a Kryo serializer for a class (the call moved to the SerializerConfig in 2.0). */
    @SuppressWarnings("rawtypes")
    public static void registerKryo(org.apache.flink.streaming.api.environment.StreamExecutionEnvironment env, Class<?> type,
            Class<? extends com.esotericsoftware.kryo.Serializer> serializer) {
        env.getConfig().registerTypeWithKryoSerializer(type, serializer);
    }

    /** A sink of the records of s: a SinkFunction (the sink API every 1.x has). */
    public static <T> org.apache.flink.streaming.api.datastream.DataStreamSink<T> sinkTo(
            org.apache.flink.streaming.api.datastream.DataStream<T> s, RecordSink<T> sink) {
        return s.addSink(new SinkFunctionOf<>(sink));
    }

    @SuppressWarnings("deprecation")
    static final class SinkFunctionOf<T> extends org.apache.flink.streaming.api.functions.sink.RichSinkFunction<T> {
        private static final long serialVersionUID = 1L;
        private final RecordSink<T> sink;

        SinkFunctionOf(RecordSink<T> sink) {
            this.sink = sink;
        }

        @Override
        public void invoke(T value, Context ctx) throws java.io.IOException {
            sink.write(value);
        }

        @Override
        public void finish() throws java.io.IOException {
            sink.end();
        }

        @Override
        public void close() throws Exception {
            sink.close();
        }
    }
}
