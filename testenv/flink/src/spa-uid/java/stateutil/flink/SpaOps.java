package stateutil.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.SavepointWriter;
import org.apache.flink.state.api.StateBootstrapTransformation;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** The State Processor API calls that name an operator: by uid string (Flink 1.15 and 1.16 have no OperatorIdentifier). */
final class SpaOps {
    private SpaOps() {}

    static <K, OUT> DataStream<OUT> readKeyed(SavepointReader r, String uid, KeyedStateReaderFunction<K, OUT> f,
            TypeInformation<K> key, TypeInformation<OUT> out) throws Exception {
        return r.readKeyedState(uid, f, key, out);
    }

    static <T> DataStream<T> readList(SavepointReader r, String uid, String name, TypeInformation<T> t) throws Exception {
        return r.readListState(uid, name, t);
    }

    static <T> DataStream<T> readUnion(SavepointReader r, String uid, String name, TypeInformation<T> t) throws Exception {
        return r.readUnionState(uid, name, t);
    }

    static <K, V> DataStream<Tuple2<K, V>> readBroadcast(SavepointReader r, String uid, String name, TypeInformation<K> k,
            TypeInformation<V> v) throws Exception {
        return r.readBroadcastState(uid, name, k, v);
    }

    /** env is unused: before 1.17 the writer runs in the environment of its transformations. */
    static SavepointWriter newSavepoint(StreamExecutionEnvironment env, StateBackend sb, int maxP) {
        return SavepointWriter.newSavepoint(sb, maxP);
    }

    static <T> SavepointWriter withOperator(SavepointWriter w, String uid, StateBootstrapTransformation<T> t) {
        return w.withOperator(uid, t);
    }
}
