package stateutil.flink;

/** State Processor API commands. */
final class Spa {
    private Spa() {}

    static int dump(Harness.Opts o) throws Exception {
        throw new Harness.UsageException("spa-dump: not yet");
    }

    static int rewrite(Harness.Opts o) throws Exception {
        throw new Harness.UsageException("spa-rewrite: not yet");
    }
}
