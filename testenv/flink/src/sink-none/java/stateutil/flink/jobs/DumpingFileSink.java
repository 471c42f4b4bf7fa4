package stateutil.flink.jobs;

import org.apache.flink.connector.file.sink.FileSink;

import stateutil.flink.SinkBase;

/** Before Flink 1.19 the sink API has no SupportsWriterState/SupportsCommitter: the connectors job is not available. */
final class DumpingFileSink extends SinkBase<String> {
    private static final long serialVersionUID = 1L;

    DumpingFileSink(FileSink<String> inner, String uid, int parallelism) {
        throw new UnsupportedOperationException("the connectors job needs Flink 1.19 or later (sink writer state and committer API)");
    }
}
