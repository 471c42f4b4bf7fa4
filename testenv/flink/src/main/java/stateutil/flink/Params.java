package stateutil.flink;

import java.io.Serializable;

/** What a job is built from: the same on snapshot, restore and State Processor API runs. */
public final class Params implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Records the source emits while snapshotting. */
    public long records = 1000;
    /** Distinct keys (0: the job's default). */
    public long keys;
    /** Bytes of payload per record (big job). */
    public int payload = 64;
    public int parallelism = 2;
    /** The snapshot is an unaligned checkpoint with records in flight: the jobs that take one wait for their sources only. */
    public boolean unaligned;
}
