package stateutil.flink;

import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * A {@link RestoredStateDumper} with two inputs, in the place of a two-input operator (a
 * join): with the same input types and key selectors, the records a checkpoint kept in
 * flight on either input are read back as Flink wrote them (and ignored).
 */
public final class RestoredStateDumper2<K> extends RestoredStateDumper<K> implements TwoInputStreamOperator<Object, Object, Long> {
    private static final long serialVersionUID = 1L;

    public RestoredStateDumper2(String uid) {
        super(uid);
    }

    @Override
    public void processElement1(StreamRecord<Object> element) {}

    @Override
    public void processElement2(StreamRecord<Object> element) {}
}
