package stateutil.flink;

import java.io.IOException;
import java.io.Serializable;

/**
 * What a job's sink does with its records, whichever sink API wraps it (Compat.sinkTo: a
 * SinkFunction on 1.x, a Sink on 2.x). Opening is left to the first call: open() differs
 * between the versions the harness builds for.
 */
public interface RecordSink<T> extends Serializable {
    void write(T record) throws IOException;

    /** The input has ended (not called when the job fails). */
    void end() throws IOException;

    void close() throws IOException;
}
