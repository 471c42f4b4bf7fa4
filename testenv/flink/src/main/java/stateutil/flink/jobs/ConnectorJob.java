package stateutil.flink.jobs;

import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import stateutil.flink.DumpingKeyedOperator;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * What the connector jobs share: a connector's source (uid source()) whose readers each stop
 * after readerLimit records, so that the snapshot holds unfinished splits, feeding the keyed
 * operator: keys "part-" + (r % 4), ValueState "count" and "last".
 */
abstract class ConnectorJob extends SimpleKeyedJob<String> {
    /** The source's uid. */
    abstract String source();

    /** Records each source reader emits before it stops. */
    abstract long readerLimit(Params p);

    @Override
    long divisor() {
        return Long.MAX_VALUE; // four keys
    }

    @Override
    TypeInformation<String> keyType() {
        return Types.STRING;
    }

    @Override
    KeyedSpec spec() {
        return new KeyedSpec(KEYED, Types.STRING,
                List.of(StateDef.value("count", Types.LONG), StateDef.value("last", Types.LONG)), false);
    }

    @Override
    String key(long r, long keys) {
        return "part-" + (r % keys);
    }

    @SuppressWarnings("unchecked")
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        increment(s.get(0));
        ((ValueState<Long>) s.get(1)).update(r);
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(Jobs.sourceState(source()));
    }

    @Override
    public Map<String, Long> expected(Params p) {
        return Map.of(KEYED, readerLimit(p) * p.parallelism);
    }

    /** The source's lines as record numbers, after they went through the keyed operator. */
    <S extends SourceSplit, E> DataStream<Long> keyedFrom(StreamExecutionEnvironment env, Source<String, S, E> source,
            ConnectorsJob.SplitJson<S> splitJson, Params p) {
        long keys = Jobs.keys(p, divisor());
        KeyedSpec spec = spec();
        DataStream<Long> records = env
                .fromSource(new ConnectorsJob.Stopping<>(source, source(), readerLimit(p), splitJson), WatermarkStrategy.noWatermarks(), source())
                .uid(source())
                .map(new ConnectorsJob.Parse())
                .uid("parse");
        records.keyBy(new Key<>(this, keys), keyType())
                .transform(KEYED, Types.LONG, new DumpingKeyedOperator<String, Long, Long>(new Fn<>(this, spec, keys, p), spec))
                .uid(KEYED);
        return records;
    }
}
