package stateutil.flink;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.List;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.core.memory.DataOutputViewStreamWrapper;
import org.apache.flink.state.api.OperatorTransformation;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.SavepointWriter;
import org.apache.flink.state.api.StateBootstrapTransformation;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.types.Row;

import stateutil.flink.jobs.Jobs;

/**
 * The State Processor API carrying keyed state from one Flink to another, the peer of
 * stateutil upgrade in make bench: {@code spa-export} (run on Flink 1.x) reads every key's row
 * as spa-rewrite does and writes the rows to a file with the rows' serializer (whose bytes are
 * the same in both majors for the types it holds), from a sink of parallelism 1 in the job
 * rather than through the client; {@code spa-import} (run on Flink 2.x) reads
 * them back in order and bootstraps a savepoint from them with the job's descriptors. Keyed
 * state only (the benchmark jobs' one operator state, the source's splits, is left out).
 */
final class SpaCarry {
    private SpaCarry() {}

    /** The serializer of rows of t: createSerializer(SerializerConfig) where it exists (1.19 on). */
    @SuppressWarnings("unchecked")
    static TypeSerializer<Row> serializer(RowTypeInfo t) throws Exception {
        ExecutionConfig ec = new ExecutionConfig();
        try {
            Object sc = ExecutionConfig.class.getMethod("getSerializerConfig").invoke(ec);
            Class<?> scClass = Class.forName("org.apache.flink.api.common.serialization.SerializerConfig");
            return (TypeSerializer<Row>) TypeInformation.class.getMethod("createSerializer", scClass).invoke(t, sc);
        } catch (NoSuchMethodException | ClassNotFoundException e) {
            return (TypeSerializer<Row>) TypeInformation.class.getMethod("createSerializer", ExecutionConfig.class).invoke(t, ec);
        }
    }

    static int export(Harness.Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        String snap = Harness.uri(o.get("snapshot"));
        String out = o.get("out");
        Params p = Harness.params(o);
        String backend = o.get("backend", "auto");
        o.done();
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = Spa.env(p);
        SavepointReader r = SavepointReader.read(env, snap, Spa.backend(backend, snap));
        List<KeyedSpec> specs = job.keyed(p);
        if (specs.size() != 1) {
            throw new Harness.UsageException("spa-export carries jobs of one keyed operator, and " + job.name() + " has " + specs.size());
        }
        KeyedSpec ks = specs.get(0);
        Spa.refuseUnnamed(job, ks);
        RowTypeInfo rt = Spa.rowType(ks);
        DataStream<Row> keyed = Spa.readKeyed(r, ks, new Spa.RowReader(ks), rt);
        Compat.sinkTo(keyed, new RowsOut(out, rt)).setParallelism(1).name("rows to " + out);
        env.execute("stateutil-spa-export-" + job.name());
        double s = (System.nanoTime() - t0) / 1e9;
        System.err.printf("flink-harness: State Processor API exported the keys of %s in %.1fs%n", Harness.display(snap), s);
        Harness.OUT.println(out);
        Harness.OUT.printf("elapsed_seconds %.3f%n", s);
        return 0;
    }

    static int importRows(Harness.Opts o) throws Exception {
        Job job = Jobs.get(o.get("job"));
        String in = o.get("in");
        int maxP = Integer.parseInt(o.get("max-parallelism"));
        String out = Harness.uri(o.get("out"));
        Params p = Harness.params(o);
        String backend = o.get("backend", "hashmap");
        o.done();
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = Spa.env(p);
        KeyedSpec ks = job.keyed(p).get(0);
        RowTypeInfo rt = Spa.rowType(ks);
        long n = count(in, serializer(rt));
        DataStream<Row> rows = env.fromSequence(0, Math.max(n - 1, 0)).setParallelism(1)
                .map(new RowFile(in, rt)).returns(rt).setParallelism(1);
        if (n == 0) {
            rows = rows.filter(x -> false).returns(rt);
        }
        StateBootstrapTransformation<Row> t = OperatorTransformation.bootstrapWith(rows)
                .keyBy(new Spa.RowKey(ks.keyType), (TypeInformation) ks.keyType)
                .transform(new Spa.RowWriter(ks));
        SavepointWriter w = SpaOps.newSavepoint(env, Spa.backend(backend, null), maxP);
        w = SpaOps.withOperator(w, ks.uid, t);
        w.write(out);
        env.execute("stateutil-spa-import-" + job.name());
        double s = (System.nanoTime() - t0) / 1e9;
        System.err.printf("flink-harness: State Processor API imported %d keys into %s in %.1fs%n", n, Harness.display(out), s);
        Harness.OUT.println(Harness.display(out));
        Harness.OUT.printf("elapsed_seconds %.3f%n", s);
        return 0;
    }

    /** Writes every row to one file, each after a true and with the rows' serializer, then a false (parallelism 1). */
    static final class RowsOut implements RecordSink<Row> {
        private static final long serialVersionUID = 1L;
        private final String out;
        private final RowTypeInfo rt;
        private transient DataOutputViewStreamWrapper w;
        private transient TypeSerializer<Row> ser;
        private transient long rows;

        RowsOut(String out, RowTypeInfo rt) {
            this.out = out;
            this.rt = rt;
        }

        private void open() throws IOException {
            if (w != null) {
                return;
            }
            try {
                ser = serializer(rt);
            } catch (Exception e) {
                throw new IOException("no serializer for " + rt, e);
            }
            w = new DataOutputViewStreamWrapper(new BufferedOutputStream(new FileOutputStream(out), 1 << 20));
        }

        @Override
        public void write(Row row) throws IOException {
            open();
            w.writeBoolean(true);
            ser.serialize(row, w);
            rows++;
        }

        @Override
        public void end() throws IOException {
            open();
            w.writeBoolean(false);
            w.flush();
            System.err.printf("flink-harness: State Processor API wrote %d rows to %s%n", rows, out);
        }

        @Override
        public void close() throws IOException {
            if (w != null) {
                w.close();
                w = null;
            }
        }
    }

    /** The rows an export holds (a first pass, so that the source knows how many to read). */
    static long count(String in, TypeSerializer<Row> ser) throws Exception {
        long n = 0;
        try (BufferedInputStream bi = new BufferedInputStream(new FileInputStream(in), 1 << 20)) {
            DataInputViewStreamWrapper r = new DataInputViewStreamWrapper(bi);
            while (r.readBoolean()) {
                ser.deserialize(r);
                n++;
            }
        } catch (EOFException e) {
            throw new IllegalStateException(in + " is cut short after " + n + " rows", e);
        }
        return n;
    }

    /** Reads the i-th row of an export (in order, one subtask). */
    static final class RowFile extends RichMapFunction<Long, Row> {
        private static final long serialVersionUID = 1L;
        private final String in;
        private final RowTypeInfo rt;
        private transient DataInputViewStreamWrapper r;
        private transient TypeSerializer<Row> ser;

        RowFile(String in, RowTypeInfo rt) {
            this.in = in;
            this.rt = rt;
        }

        @Override
        public Row map(Long i) throws Exception {
            if (r == null) {
                // Here, not in open(), whose signature differs from 1.18 to 1.19.
                ser = serializer(rt);
                r = new DataInputViewStreamWrapper(new BufferedInputStream(new FileInputStream(in), 1 << 20));
            }
            if (!r.readBoolean()) {
                throw new IllegalStateException(in + " has no row " + i);
            }
            return ser.deserialize(r);
        }

        @Override
        public void close() throws Exception {
            if (r != null) {
                r.close();
            }
        }
    }
}
