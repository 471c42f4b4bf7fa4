package stateutil.flink.jobs;

import org.apache.flink.connector.file.sink.FileSink;

import stateutil.flink.SinkBase;

/** Before Flink 1.18 the harness has no sink layer for the connector jobs: the connectors job is not available. */
final class DumpingFileSink extends SinkBase<String> {
    private static final long serialVersionUID = 1L;

    DumpingFileSink(FileSink<String> inner, String uid, int parallelism) {
        throw new UnsupportedOperationException("the connectors job runs on Flink 1.18 or later (the harness has no sink layer before)");
    }
}
