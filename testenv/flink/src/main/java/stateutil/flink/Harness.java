package stateutil.flink;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import stateutil.flink.jobs.Jobs;

/**
 * stateutil's real-Flink test harness: one command per JVM, Flink's MiniCluster in-process.
 *
 * <pre>
 * snapshot     --job J --backend hashmap|rocksdb --kind checkpoint|canonical|native
 *              [--incremental] [--compression] [--changelog] [--parallelism P]
 *              [--max-parallelism M] [--records N] [--keys K] [--payload B]
 *              --dir OUT --dump DUMP.jsonl [--manifest FILE]
 * restore-dump --job J --snapshot PATH --backend B [--parallelism P] [--max-parallelism M|unset]
 *              [--records N] --dump DUMP.jsonl [--allow-non-restored] [--changelog]
 *              [--rename-uid OLD=NEW] [--rename-state OLD=NEW] [--per-state]
 *              (--per-state: a state Flink fails to register or read is an "error" line of the
 *              dump, not a failed job; when the job fails all the same, the dump holds an
 *              "error" line for each state whose serializer snapshots Flink cannot restore)
 * spa-dump     --job J --snapshot PATH --dump DUMP.jsonl [--records N] [--rename-uid OLD=NEW]
 *              [--without-operator UID]
 * spa-rewrite  --job J --snapshot PATH --max-parallelism M --out DIR [--records N]
 * continue     --job J --snapshot PATH --backend B [--parallelism P] [--max-parallelism M|unset]
 *              [--records N] --continue-to M --out OUTPUT.jsonl [--allow-non-restored] [--changelog]
 * proto-descriptors --out FILE
 * unrestorable --snapshot PATH --dump DUMP.jsonl
 *              (no job: an "error" line for each state whose serializer snapshots this Flink
 *              cannot restore, as restore-dump --per-state writes them when a job fails)
 * spa-count    --job J --snapshot PATH --out COUNTS.txt [--max-parallelism M] [--records N]
 *              (keyed entries per key group, "KEY_GROUP COUNT" lines: the benchmark peer of
 *              stateutil sql's GROUP BY key_group)
 * version
 * </pre>
 *
 * Paths may be local paths or URIs (file:, hdfs://127.0.0.1:PORT/...). Exit status 0 on
 * success; on failure one line "flink-harness: ..." with Flink's root cause on stderr, exit 1
 * (2 for usage errors).
 */
public final class Harness {
    static final PrintStream OUT = System.out;

    private Harness() {}

    public static void main(String[] argv) {
        // Flink logs to stdout in some places; stdout is for results only.
        System.setOut(System.err);
        int rc;
        try {
            rc = run(argv);
        } catch (UsageException e) {
            System.err.println("flink-harness: " + e.getMessage());
            rc = 2;
        } catch (Throwable e) {
            String summary = e instanceof RestoreFailed ? e.getMessage() : rootMessage(e);
            e.printStackTrace(System.err);
            // One line, last, for scripts and tests that keep only the tail.
            System.err.println("flink-harness: failed: " + summary);
            rc = 1;
        }
        OUT.flush();
        System.err.flush();
        // Flink leaves non-daemon threads behind.
        Runtime.getRuntime().halt(rc);
    }

    /** "Class: message" of the deepest cause (Flink's own reason), on one line. */
    static String rootMessage(Throwable e) {
        if (e == null) {
            return "unknown failure";
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return (root.getClass().getName() + ": " + root.getMessage()).replace('\n', ' ');
    }

    static final class UsageException extends Exception {
        UsageException(String m) {
            super(m);
        }
    }

    /** Parsed --name value / --flag options. */
    static final class Opts {
        final Map<String, String> values = new HashMap<>();
        final Set<String> flags = new java.util.HashSet<>();
        final Set<String> used = new java.util.HashSet<>();

        static final Set<String> FLAGS = Set.of("incremental", "compression", "changelog", "allow-non-restored", "unsorted", "unaligned", "per-state");

        Opts(String[] a, int from) throws UsageException {
            for (int i = from; i < a.length; i++) {
                if (!a[i].startsWith("--")) {
                    throw new UsageException("unexpected argument " + a[i]);
                }
                String n = a[i].substring(2);
                if (FLAGS.contains(n)) {
                    flags.add(n);
                } else if (i + 1 < a.length) {
                    values.put(n, a[++i]);
                } else {
                    throw new UsageException("--" + n + " needs a value");
                }
            }
        }

        String get(String n) throws UsageException {
            used.add(n);
            String v = values.get(n);
            if (v == null) {
                throw new UsageException("missing --" + n);
            }
            return v;
        }

        String get(String n, String def) {
            used.add(n);
            return values.getOrDefault(n, def);
        }

        boolean flag(String n) {
            used.add(n);
            return flags.contains(n);
        }

        void done() throws UsageException {
            for (String n : values.keySet()) {
                if (!used.contains(n)) {
                    throw new UsageException("unknown option --" + n);
                }
            }
            for (String n : flags) {
                if (!used.contains(n)) {
                    throw new UsageException("unknown option --" + n);
                }
            }
        }
    }

    static int run(String[] a) throws Exception {
        if (a.length == 0) {
            throw new UsageException("usage: version|snapshot|uids|restore-dump|unrestorable|spa-dump|spa-rewrite|spa-count|spa-export|spa-import|continue|proto-descriptors|in-flight|table-vectors [options]");
        }
        Opts o = new Opts(a, 1);
        Jobs.readingBack = !a[0].equals("snapshot");
        switch (a[0]) {
            case "version":
                o.done();
                OUT.println(EnvironmentInformation.getVersion());
                return 0;
            case "snapshot":
                return snapshot(o);
            case "uids":
                return uids(o);
            case "restore-dump":
                return restoreDump(o);
            case "spa-dump":
                return Spa.dump(o);
            case "spa-rewrite":
                return Spa.rewrite(o);
            case "continue":
                return continueJob(o);
            case "proto-descriptors":
                return protoDescriptors(o);
            case "unrestorable":
                return unrestorable(o);
            case "in-flight":
                return inFlight(o);
            case "table-vectors":
                return tableVectors(o);
            case "spa-count":
                return Spa.count(o);
            case "spa-export":
                return SpaCarry.export(o);
            case "spa-import":
                return SpaCarry.importRows(o);
            default:
                throw new UsageException("unknown command " + a[0]);
        }
    }

    static Params params(Opts o) throws UsageException {
        Params p = new Params();
        p.unaligned = o.flag("unaligned");
        p.records = Long.parseLong(o.get("records", "1000"));
        p.keys = Long.parseLong(o.get("keys", "0"));
        p.payload = Integer.parseInt(o.get("payload", "64"));
        p.parallelism = Integer.parseInt(o.get("parallelism", "2"));
        if (p.records < 0 || p.parallelism < 1) {
            throw new UsageException("bad --records or --parallelism");
        }
        return p;
    }

    /** A URI string for a path or URI argument (local paths made absolute). */
    static String uri(String pathOrUri) {
        if (pathOrUri.matches("^[a-zA-Z][a-zA-Z0-9+.-]*://.*") || pathOrUri.startsWith("file:")) {
            return pathOrUri;
        }
        return new File(pathOrUri).getAbsoluteFile().toURI().toString();
    }

    /** A local path for a file: URI; other URIs as they are. */
    static String display(String pointer) {
        if (pointer.startsWith("file:")) {
            return Paths.get(URI.create(pointer.replace("file:///", "file:/").replaceFirst("^file:/+", "file:/"))).toString();
        }
        return pointer;
    }

    static long timeoutSeconds() {
        String t = System.getenv("STATEUTIL_FLINK_TIMEOUT");
        return t == null || t.isEmpty() ? 600 : Long.parseLong(t);
    }

    /** Flink configuration shared by cluster and job. Old and new key names are both set. */
    static Configuration config(String backend, int parallelism, Opts o, String dirUri) throws UsageException {
        Configuration c = new Configuration();
        if (!backend.equals("hashmap") && !backend.equals("rocksdb") && !backend.equals("forst")) {
            throw new UsageException("--backend must be hashmap, rocksdb or forst, not " + backend);
        }
        set(c, backend, "state.backend.type", "state.backend");
        set(c, "none", "restart-strategy.type", "restart-strategy");
        set(c, "127.0.0.1", "rest.bind-address", "rest.address", "jobmanager.rpc.address", "jobmanager.bind-host",
                "taskmanager.host", "taskmanager.bind-host");
        set(c, "0", "rest.port");
        set(c, String.valueOf(parallelism), "parallelism.default");
        set(c, String.valueOf(Math.max(parallelism, 1)), "taskmanager.numberOfTaskSlots");
        set(c, System.getProperty("stateutil.managed", "256m"), "taskmanager.memory.managed.size");
        set(c, "64m", "taskmanager.memory.network.min", "taskmanager.memory.network.max");
        // Checkpoints may take long on a shared 2-core machine (big savepoints).
        set(c, "1 h", "execution.checkpointing.timeout");
        String tmp = System.getProperty("stateutil.tmp");
        if (tmp != null) {
            set(c, tmp, "io.tmp.dirs");
        }
        // More settings, "key=value;key=value" (STATEUTIL_FLINK_CONF): such as ForSt's timers on the
        // heap, with which ForSt restores canonical savepoints.
        String more = System.getProperty("stateutil.conf", "");
        for (String kv : more.split(";")) {
            int eq = kv.indexOf('=');
            if (eq > 0) {
                set(c, kv.substring(eq + 1).trim(), kv.substring(0, eq).trim());
            }
        }
        if (dirUri != null) {
            set(c, dirUri, "state.checkpoints.dir", "execution.checkpointing.dir");
            set(c, dirUri, "state.savepoints.dir", "execution.checkpointing.savepoint-dir");
        }
        set(c, "RETAIN_ON_CANCELLATION", "execution.checkpointing.externalized-checkpoint-retention");
        set(c, String.valueOf(o.flag("incremental")), "state.backend.incremental", "execution.checkpointing.incremental");
        set(c, String.valueOf(o.flag("compression")), "execution.checkpointing.snapshot-compression");
        if (o.flag("unaligned")) {
            // Barriers overtake the records in flight, which the checkpoint keeps as channel state.
            set(c, "true", "execution.checkpointing.unaligned", "execution.checkpointing.unaligned.enabled");
            set(c, "0 ms", "execution.checkpointing.aligned-checkpoint-timeout", "execution.checkpointing.alignment-timeout");
            set(c, "EXACTLY_ONCE", "execution.checkpointing.mode");
            // Flink configures tasks for unaligned (exactly-once) barriers only when checkpointing
            // is on: an interval and a pause after each checkpoint that no run reaches (the
            // harness triggers its one checkpoint itself).
            set(c, "365 d", "execution.checkpointing.interval");
            set(c, "365 d", "execution.checkpointing.min-pause");
        }
        boolean changelog = o.flag("changelog");
        set(c, String.valueOf(changelog), "state.backend.changelog.enabled", "state.changelog.enabled");
        if (changelog) {
            set(c, "filesystem", "state.backend.changelog.storage", "state.changelog.storage");
            // No materialisation: the checkpoint holds the state as change log only.
            set(c, "false", "state.backend.changelog.periodic-materialize.enabled", "state.changelog.periodic-materialize.enabled");
            set(c, "365 d", "state.backend.changelog.periodic-materialize.interval", "state.changelog.periodic-materialize.interval");
            // A restore writes its own change log: to the run's temp dir (snapshot overrides).
            set(c, uri(new File(System.getProperty("java.io.tmpdir"), "changelog").getPath()),
                    "dstl.dfs.base-path", "state.changelog.dstl.dfs.base-path");
        }
        return c;
    }

    static void set(Configuration c, String value, String... keys) {
        for (String k : keys) {
            c.setString(k, value);
        }
    }

    static StreamExecutionEnvironment env(Configuration c, Params p, String maxP) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(c);
        env.setParallelism(p.parallelism);
        if (maxP != null && !maxP.equals("unset")) {
            env.setMaxParallelism(Integer.parseInt(maxP));
        }
        return env;
    }

    static MiniCluster cluster(Configuration c, int parallelism) throws Exception {
        MiniCluster mc = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(c)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(Math.max(parallelism, 1))
                .build());
        mc.start();
        return mc;
    }

    static JobGraph graph(StreamExecutionEnvironment env, String name) {
        StreamGraph sg = env.getStreamGraph();
        sg.setJobName(name);
        return sg.getJobGraph();
    }

    /**
     * --rename-uid OLD=NEW: the job runs its operator OLD under uid NEW (to restore state an
     * operator rename moved there), and its dump lines name it NEW.
     */
    static final class UidRename {
        static final UidRename NONE = new UidRename("", "");
        final String from, to;

        private UidRename(String from, String to) {
            this.from = from;
            this.to = to;
        }

        static UidRename parse(String spec) throws UsageException {
            if (spec.isEmpty()) {
                return NONE;
            }
            int i = spec.indexOf('=');
            if (i <= 0 || i == spec.length() - 1) {
                throw new UsageException("--rename-uid wants OLD=NEW, not " + spec);
            }
            return new UidRename(spec.substring(0, i), spec.substring(i + 1));
        }

        /** Gives the job's operator of uid from uid to (before env builds its graph). */
        void apply(StreamExecutionEnvironment env) throws UsageException {
            if (this == NONE) {
                return;
            }
            Set<org.apache.flink.api.dag.Transformation<?>> renamed = new java.util.HashSet<>();
            Set<org.apache.flink.api.dag.Transformation<?>> seen = new java.util.HashSet<>();
            java.util.ArrayDeque<org.apache.flink.api.dag.Transformation<?>> todo = new java.util.ArrayDeque<>(env.getTransformations());
            while (!todo.isEmpty()) {
                org.apache.flink.api.dag.Transformation<?> t = todo.pop();
                if (!seen.add(t)) {
                    continue;
                }
                if (from.equals(t.getUid())) {
                    t.setUid(to);
                    renamed.add(t);
                }
                todo.addAll(t.getInputs());
            }
            if (renamed.size() != 1) {
                throw new UsageException("--rename-uid: the job has " + renamed.size() + " operators of uid " + from);
            }
        }

        String uid(String uid) {
            return this != NONE && uid.equals(from) ? to : uid;
        }

        private static String operatorField(String uid) {
            StringBuilder sb = new StringBuilder("\"operator\":");
            Json.string(uid, sb);
            return sb.append(',').toString();
        }

        /** The dump lines with operator OLD named NEW. */
        List<String> lines(List<String> lines) {
            if (this == NONE) {
                return lines;
            }
            List<String> out = new ArrayList<>(lines.size());
            for (String l : lines) {
                out.add(line(l));
            }
            return out;
        }

        /** One dump line with operator OLD named NEW. */
        String line(String l) {
            return this == NONE ? l : l.replace(operatorField(from), operatorField(to));
        }
    }

    /**
     * Waits until every task of the job runs. Records counted at the source may still wait in
     * the network for operators that initialize (the planner's RocksDB operators take long),
     * and Flink refuses to trigger a snapshot until every task runs; once they do, the
     * snapshot's barriers follow the records counted, so the snapshot holds them all.
     */
    static void awaitAllTasksRunning(MiniCluster mc, JobID id) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds());
        while (true) {
            String waiting = null;
            for (AccessExecutionVertex v : mc.getExecutionGraph(id).get(60, TimeUnit.SECONDS).getAllExecutionVertices()) {
                if (v.getExecutionState() != ExecutionState.RUNNING) {
                    waiting = v.getTaskNameWithSubtaskIndex() + " is " + v.getExecutionState();
                    break;
                }
            }
            if (waiting == null) {
                return;
            }
            checkRunning(mc, id);
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("tasks not all running after " + timeoutSeconds() + "s (STATEUTIL_FLINK_TIMEOUT): " + waiting);
            }
            Thread.sleep(20);
        }
    }

    /** Fails with the job's failure if it is no longer running. */
    static void checkRunning(MiniCluster mc, JobID id) throws Exception {
        JobStatus s = mc.getJobStatus(id).get(60, TimeUnit.SECONDS);
        if (s.isGloballyTerminalState() || s == JobStatus.FAILING) {
            JobResult r = mc.requestJobResult(id).get(60, TimeUnit.SECONDS);
            throw new IllegalStateException("job ended (" + s + ") before the snapshot", failure(r));
        }
    }

    static Throwable failure(JobResult r) {
        return r.getSerializedThrowable()
                .map(t -> (Throwable) t.deserializeError(Harness.class.getClassLoader()))
                .orElse(null);
    }

    static int snapshot(Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        String backend = o.get("backend");
        String kind = o.get("kind");
        Params p = params(o);
        String maxP = o.get("max-parallelism", "128");
        String dir = uri(o.get("dir"));
        // No --dump: no dump at all (benchmark snapshots of millions of keys).
        String dumpArg = o.get("dump", null);
        Path dump = dumpArg == null ? null : Paths.get(dumpArg);
        Dumps.collectKeyed = dump != null;
        String manifest = o.get("manifest", null);
        if (!Set.of("checkpoint", "canonical", "native").contains(kind)) {
            throw new UsageException("--kind must be checkpoint, canonical or native");
        }
        if (o.flag("incremental") && !(backend.equals("rocksdb") && kind.equals("checkpoint"))) {
            throw new UsageException("--incremental needs --backend rocksdb --kind checkpoint");
        }
        p.unaligned = o.flag("unaligned");
        if (p.unaligned && !kind.equals("checkpoint")) {
            throw new UsageException("--unaligned needs --kind checkpoint");
        }
        Dumps.throttleMillis = p.unaligned ? 25 : 0;
        Configuration c = config(backend, p.parallelism, o, dir);
        if (o.flag("changelog")) {
            // The change log goes under OUT when OUT is local, else to --changelog-dir.
            String def = dir.startsWith("file:") ? new File(display(dir), "changelog").getPath() : null;
            String cl = o.get("changelog-dir", def);
            if (cl == null) {
                throw new UsageException("--changelog with a remote --dir needs --changelog-dir");
            }
            set(c, uri(cl), "dstl.dfs.base-path", "state.changelog.dstl.dfs.base-path");
        }
        o.done();
        Dumps.mode = Dumps.Mode.SNAPSHOT;
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = env(c, p, maxP);
        job.build(env, p);
        JobGraph jg = graph(env, "stateutil-" + job.name());
        MiniCluster mc = cluster(c, p.parallelism);
        String pointer;
        try {
            JobID id = mc.submitJob(jg).get(120, TimeUnit.SECONDS).getJobID();
            awaitCounters(mc, id, job.expected(p));
            awaitAllTasksRunning(mc, id);
            long tIn = System.nanoTime();
            long deadline = timeoutSeconds();
            if (kind.equals("checkpoint")) {
                pointer = mc.triggerCheckpoint(id).get(deadline, TimeUnit.SECONDS);
                mc.cancelJob(id).get(120, TimeUnit.SECONDS);
                mc.requestJobResult(id).get(120, TimeUnit.SECONDS);
            } else {
                SavepointFormatType f = kind.equals("canonical") ? SavepointFormatType.CANONICAL : SavepointFormatType.NATIVE;
                pointer = mc.stopWithSavepoint(id, dir, false, f).get(deadline, TimeUnit.SECONDS);
                JobResult r = mc.requestJobResult(id).get(120, TimeUnit.SECONDS);
                if (!r.isSuccess()) {
                    throw new IllegalStateException("job failed after the savepoint", failure(r));
                }
            }
            System.err.printf("flink-harness: %d records in state after %.1fs, snapshot took %.1fs%n",
                    p.records, (tIn - t0) / 1e9, (System.nanoTime() - tIn) / 1e9);
        } finally {
            mc.close();
        }
        Set<Long> ids = Dumps.snapshotIds();
        long channelState = Metadata.channelStateHandles(pointer);
        if (p.unaligned && channelState == 0) {
            throw new IllegalStateException("the unaligned checkpoint " + display(pointer) + " holds no records in flight (no channel state)");
        }
        if (ids.size() != 1) {
            throw new IllegalStateException("expected the operators to dump exactly one snapshot, got checkpoint ids " + ids);
        }
        long cpId = ids.iterator().next();
        List<String> lines = Dumps.snapshotLines(cpId);
        if (job.dumpView() != null && dump != null) {
            // Its operators cannot dump themselves: Flink restores the snapshot into the dump view.
            lines = restoreView(job, backend, pointer, p, maxP, o.flag("changelog"));
        }
        if (dump != null) {
            writeDump(dump, lines);
        }
        String path = display(pointer);
        if (manifest != null) {
            Map<String, Object> m = Json.obj();
            m.put("flink_version", EnvironmentInformation.getVersion());
            m.put("job", job.name());
            m.put("backend", backend);
            m.put("kind", kind);
            m.put("incremental", o.flag("incremental"));
            m.put("compression", o.flag("compression"));
            m.put("changelog", o.flag("changelog"));
            m.put("unaligned", p.unaligned);
            m.put("channel_state_handles", channelState);
            if (o.flag("changelog")) {
                m.put("materialized", Metadata.changelogMaterialized(pointer));
            }
            m.put("parallelism", (long) p.parallelism);
            m.put("max_parallelism", maxP.equals("unset") ? null : (Object) Long.parseLong(maxP));
            m.put("records", p.records);
            m.put("keys", p.keys);
            if (job.name().equals("big")) {
                m.put("payload", (long) p.payload);
            }
            m.put("checkpoint_id", cpId);
            m.put("original_path", path);
            m.put("original_dir", display(dir));
            m.put("snapshot_subpath", relative(display(dir), path));
            m.put("dump_lines", dump == null ? null : (Object) (long) lines.size());
            m.put("dump_source", job.dumpNote());
            List<Object> keyedUids = new ArrayList<>();
            for (KeyedSpec ks : job.keyed(p)) {
                keyedUids.add(ks.uid);
            }
            m.put("keyed_operators", keyedUids);
            Files.write(Paths.get(manifest), (Json.render(m) + "\n").getBytes(StandardCharsets.UTF_8));
        }
        OUT.println(path);
        return 0;
    }

    /** Prints the uid and name of every operator of the job's stream graph (a debugging aid). */
    static int uids(Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        Params p = params(o);
        o.done();
        StreamExecutionEnvironment env = env(config("hashmap", p.parallelism, o, null), p, "128");
        job.build(env, p);
        for (org.apache.flink.streaming.api.graph.StreamNode n : env.getStreamGraph().getStreamNodes()) {
            OUT.println(n.getTransformationUID() + "\t" + n.getOperatorName());
        }
        return 0;
    }

    static void awaitCounters(MiniCluster mc, JobID id, Map<String, Long> expected) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds());
        long lastCheck = 0;
        while (true) {
            boolean all = true;
            for (Map.Entry<String, Long> e : expected.entrySet()) {
                long got = Dumps.counter(e.getKey()).get();
                if (got > e.getValue()) {
                    throw new IllegalStateException("operator " + e.getKey() + " saw " + got + " records, more than " + e.getValue());
                }
                all &= got == e.getValue();
            }
            if (all) {
                return;
            }
            if (System.nanoTime() - lastCheck > TimeUnit.MILLISECONDS.toNanos(500)) {
                checkRunning(mc, id);
                lastCheck = System.nanoTime();
            }
            if (System.nanoTime() > deadline) {
                StringBuilder sb = new StringBuilder();
                expected.forEach((k, v) -> sb.append(' ').append(k).append('=').append(Dumps.counter(k).get()).append('/').append(v));
                throw new TimeoutException("records not all in state after " + timeoutSeconds() + "s (STATEUTIL_FLINK_TIMEOUT):" + sb);
            }
            Thread.sleep(20);
        }
    }

    static int restoreDump(Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        String backend = o.get("backend");
        String snap = uri(o.get("snapshot"));
        Params p = params(o);
        String maxP = o.get("max-parallelism", "unset");
        Path dump = Paths.get(o.get("dump"));
        boolean allow = o.flag("allow-non-restored");
        UidRename rename = UidRename.parse(o.get("rename-uid", ""));
        if (rename != UidRename.NONE && job.dumpView() != null) {
            throw new UsageException("--rename-uid: job " + job.name() + " dumps through a dump view");
        }
        // --rename-state OLD=NEW: the job declares its keyed or operator state OLD under the
        // descriptor name NEW, as a job whose descriptor was renamed does (to restore a state
        // renamed there).
        String stateRename = o.get("rename-state", "");
        if (!stateRename.isEmpty()) {
            int i = stateRename.indexOf('=');
            if (i <= 0 || i == stateRename.length() - 1) {
                throw new UsageException("--rename-state wants OLD=NEW, not " + stateRename);
            }
            StateDef.renameDescriptor(stateRename.substring(0, i), stateRename.substring(i + 1));
        }
        Dumps.perState = o.flag("per-state");
        Configuration c = config(backend, p.parallelism, o, null);
        o.done();
        Dumps.mode = Dumps.Mode.RESTORE;
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = env(c, p, maxP);
        job.build(env, p);
        rename.apply(env);
        JobGraph jg = graph(env, "stateutil-" + job.name() + "-restore");
        jg.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(snap, allow));
        List<String> lines;
        try {
            runToEnd(c, p.parallelism, jg, "restore " + display(snap));
            lines = rename.lines(Dumps.restoreLines());
            if (job.dumpView() != null) {
                // Flink restored the job itself above; the dump comes from the dump view.
                lines = restoreView(job, backend, snap, p, maxP, o.flag("changelog"));
            }
        } catch (RestoreFailed e) {
            if (Dumps.perState) {
                // Which states Flink refuses, each on its own: the job failed at the first.
                writeDump(dump, Metadata.unrestorable(snap));
            }
            throw e;
        }
        writeDump(dump, lines);
        System.err.printf("flink-harness: restored and dumped %d lines in %.1fs%n", lines.size(), (System.nanoTime() - t0) / 1e9);
        return 0;
    }

    /**
     * The states of a snapshot whose serializer snapshots this Flink cannot restore, without a
     * job: what a restore of any job would meet first, for a snapshot no job of this Flink runs.
     */
    static int unrestorable(Opts o) throws Exception {
        String snap = uri(o.get("snapshot"));
        Path dump = Paths.get(o.get("dump"));
        o.done();
        List<String> lines = Metadata.unrestorable(snap);
        writeDump(dump, lines);
        System.err.printf("flink-harness: %d states whose serializers this Flink cannot restore%n", lines.size());
        return 0;
    }

    /**
     * Restores a snapshot into the job itself and lets it go on: its source reads on from the
     * positions the snapshot holds to record --continue-to, the job drains and ends, and its
     * outputs are written as a signed multiset, one JSON line {"count":N,"output":TEXT} per
     * output, sorted: what a snapshot and its rescaled or converted copies must all give.
     */
    static int continueJob(Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        String backend = o.get("backend");
        String snap = uri(o.get("snapshot"));
        Params p = params(o);
        String maxP = o.get("max-parallelism", "unset");
        Dumps.continueTo = Long.parseLong(o.get("continue-to"));
        Path out = Paths.get(o.get("out"));
        boolean allow = o.flag("allow-non-restored");
        Configuration c = config(backend, p.parallelism, o, null);
        o.done();
        if (Dumps.continueTo < p.records) {
            throw new UsageException("--continue-to must be at least --records");
        }
        Dumps.mode = Dumps.Mode.CONTINUE;
        Jobs.readingBack = true;
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = env(c, p, maxP);
        job.build(env, p);
        JobGraph jg = graph(env, "stateutil-" + job.name() + "-continue");
        jg.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(snap, allow));
        runToEnd(c, p.parallelism, jg, "go on from " + display(snap));
        List<String> lines = new ArrayList<>();
        Dumps.outputs().forEach((text, n) -> {
            Map<String, Object> m = Json.obj();
            m.put("count", n);
            m.put("output", text);
            lines.add(Json.render(m));
        });
        writeDump(out, lines);
        System.err.printf("flink-harness: went on to record %d and wrote %d outputs in %.1fs%n", Dumps.continueTo, lines.size(), (System.nanoTime() - t0) / 1e9);
        return 0;
    }

    /** Writes the FileDescriptorSet of the witness jobs' Protobuf messages (what protoc --descriptor_set_out writes). */
    static int protoDescriptors(Opts o) throws Exception {
        Path out = Paths.get(o.get("out"));
        o.done();
        Files.write(out, stateutil.flink.jobs.ZooJob.protoDescriptors());
        OUT.println(out);
        return 0;
    }

    /** Prints the bytes of the records in flight that a snapshot's channel state holds. */
    static int inFlight(Opts o) throws Exception {
        String snapshot = o.get("snapshot");
        o.done();
        OUT.println(Metadata.inFlightBytes(snapshot));
        return 0;
    }

    static int tableVectors(Opts o) throws Exception {
        Path out = Paths.get(o.get("out"));
        o.done();
        TableSerializerVectors.write(out);
        OUT.println(out);
        return 0;
    }

    /** Restores a snapshot into the job's dump view and returns the lines it dumped. */
    static List<String> restoreView(Job job, String backend, String snap, Params p, String maxP, boolean changelog) throws Exception {
        Dumps.mode = Dumps.Mode.RESTORE;
        Dumps.throttleMillis = 0;
        Dumps.clearRestoreLines();
        Dumps.viewSnapshot = uri(snap);
        Opts o = new Opts(changelog ? new String[] {"--changelog"} : new String[0], 0);
        Configuration c = config(backend, p.parallelism, o, null);
        if (Metadata.channelStateHandles(snap) > 0) {
            // The view reads state, not records in flight, and is another job graph: a dumper has
            // no output where the job's operator had one, and Flink fails to put the operator's
            // output buffers back (ArrayIndexOutOfBoundsException). Flink restores without the
            // channel state of the checkpoint whose id this names.
            set(c, String.valueOf(Metadata.load(snap).getCheckpointId()), "execution.state-recovery.without-channel-state.checkpoint-id",
                    "execution.checkpointing.recover-without-channel-state.checkpoint-id");
        }
        StreamExecutionEnvironment env = env(c, p, maxP);
        job.dumpView().build(env, p);
        JobGraph jg = graph(env, "stateutil-" + job.name() + "-dump-view");
        jg.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(uri(snap), true));
        runToEnd(c, p.parallelism, jg, "restore " + display(snap) + " into the dump view");
        return Dumps.restoreLines();
    }

    /**
     * Runs a job that restores a snapshot until it ends; if it fails, RestoreFailed says
     * "Flink did not WHAT: " and Flink's root cause.
     */
    static void runToEnd(Configuration c, int parallelism, JobGraph jg, String what) throws Exception {
        MiniCluster mc = cluster(c, parallelism);
        try {
            JobID id = mc.submitJob(jg).get(120, TimeUnit.SECONDS).getJobID();
            JobResult r = mc.requestJobResult(id).get(timeoutSeconds(), TimeUnit.SECONDS);
            if (!r.isSuccess()) {
                Throwable f = failure(r);
                throw new RestoreFailed("Flink did not " + what + ": " + rootMessage(f), f);
            }
        } finally {
            mc.close();
        }
    }

    static final class RestoreFailed extends Exception {
        RestoreFailed(String m, Throwable cause) {
            super(m, cause);
        }
    }

    /** path relative to dir when it lies under it, else null. */
    static String relative(String dir, String path) {
        if (dir.contains("://") || path.contains("://")) {
            String d = dir.endsWith("/") ? dir : dir + "/";
            return path.startsWith(d) ? path.substring(d.length()) : null;
        }
        Path d = Paths.get(dir).toAbsolutePath().normalize();
        Path p = Paths.get(path).toAbsolutePath().normalize();
        return p.startsWith(d) ? d.relativize(p).toString() : null;
    }

    static void writeDump(Path dump, List<String> lines) throws IOException {
        List<String> sorted = new ArrayList<>(lines);
        sorted.sort(Json::compareBytes);
        StringBuilder sb = new StringBuilder();
        for (String l : sorted) {
            sb.append(l).append('\n');
        }
        Path parent = dump.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.write(dump, sb.toString().getBytes(StandardCharsets.UTF_8));
    }
}
