package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.Row;

import stateutil.flink.Dumps;
import stateutil.flink.Job;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;
import stateutil.flink.RestoredStateDumper;

/**
 * SQL queries as the planner's restore tests run them, over one table {@code records(k, v)}
 * of the main source (k = "k" + r % keys, v = r, keys = N/10). Every stateful operator the
 * planner makes is found in the planned graph (its uid from {@code table.exec.uid.generation},
 * its key type); the dump comes from a dump view in which a {@link RestoredStateDumper} with
 * each uid reads every state and timer the snapshot records, with the snapshot's serializers.
 *
 * <p>{@code sql}: regular joins (inner with and without a unique key, left outer, anti, semi),
 * a group aggregate with DISTINCT, deduplication keeping the first and the last row (processing
 * time), and Top-N (append-only, and over an updating aggregate). Flink snapshots once every
 * record left the source; the barrier follows them.
 *
 * <p>{@code sqltime}: event time {@code rowtime} = (r / 10) * 10 s, so the ten records of a
 * block share one timestamp; window TVFs (TUMBLE, HOP, CUMULATE), the group-window TUMBLE and
 * SESSION, deduplication on event time and an event-time temporal join on the versioned view
 * it makes. Every split's watermark ends one millisecond before the last block, and Flink
 * snapshots once the TUMBLE query emitted every window that watermark closes, so the
 * watermark of the snapshot is that one.
 */
public final class SqlJob implements Job {
    static final String INPUT = "input";
    static final String RECORDS = "records", WINDOWS = "windows";
    private static final long BLOCK = 10, BLOCK_MS = 10_000;

    private final String name;
    private final boolean eventTime;
    private final String[] views, queries;
    /** Keyed operators as planned in this JVM (uid to state key type). */
    private transient volatile Map<String, TypeInformation<?>> keyed;

    private SqlJob(String name, boolean eventTime, String[] views, String[] queries) {
        this.name = name;
        this.eventTime = eventTime;
        this.views = views;
        this.queries = queries;
    }

    static SqlJob regular() {
        return new SqlJob("sql", false, new String[] {
            "CREATE TEMPORARY VIEW a AS SELECT k, v FROM records WHERE MOD(v, 2) = 0",
            "CREATE TEMPORARY VIEW b AS SELECT k, v, CONCAT('b', CAST(v AS STRING)) AS s FROM records WHERE MOD(v, 3) = 0 AND MOD(v, 20) < 10",
        }, new String[] {
            "SELECT a.k, a.v, b.v AS bv FROM a JOIN b ON a.k = b.k",
            "SELECT a.k, a.v, g.c FROM a JOIN (SELECT k, COUNT(*) AS c FROM b GROUP BY k) g ON a.k = g.k",
            "SELECT a.k, a.v, b.s FROM a LEFT JOIN b ON a.k = b.k",
            "SELECT * FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
            "SELECT * FROM a WHERE a.k IN (SELECT k FROM b)",
            "SELECT k, COUNT(*) AS c, COUNT(DISTINCT MOD(v, 7)) AS d7, SUM(DISTINCT MOD(v, 5)) AS s5,"
                + " COUNT(DISTINCT CONCAT(k, CAST(MOD(v, 3) AS STRING))) AS ds, MAX(v) AS m FROM records GROUP BY k",
            "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt ASC) AS rn FROM records) WHERE rn = 1",
            "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt DESC) AS rn FROM records) WHERE rn = 1",
            "SELECT * FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM records) WHERE rn <= 3",
            "SELECT * FROM (SELECT g, k, c, ROW_NUMBER() OVER (PARTITION BY g ORDER BY c ASC, k ASC) AS rn"
                + " FROM (SELECT k, MOD(v, 3) AS g, COUNT(*) AS c FROM records GROUP BY k, MOD(v, 3))) WHERE rn <= 2",
        });
    }

    static SqlJob eventTime() {
        return new SqlJob("sqltime", true, new String[] {
            "CREATE TEMPORARY VIEW versions AS SELECT k, v AS price, rowtime FROM (SELECT k, v, rowtime,"
                + " ROW_NUMBER() OVER (PARTITION BY k ORDER BY rowtime DESC) AS rn FROM records WHERE MOD(v, 5) = 0) WHERE rn = 1",
        }, new String[] {
            // The first query's results are what the harness waits for.
            "SELECT window_start, window_end, k, COUNT(*) AS c, SUM(v) AS s, COUNT(DISTINCT MOD(v, 3)) AS d"
                + " FROM TABLE(TUMBLE(TABLE records, DESCRIPTOR(rowtime), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, k",
            "SELECT window_start, window_end, k, COUNT(*) AS c, MAX(v) AS m"
                + " FROM TABLE(HOP(TABLE records, DESCRIPTOR(rowtime), INTERVAL '10' SECOND, INTERVAL '20' SECOND)) GROUP BY window_start, window_end, k",
            "SELECT window_start, window_end, k, COUNT(*) AS c, SUM(v) AS s"
                + " FROM TABLE(CUMULATE(TABLE records, DESCRIPTOR(rowtime), INTERVAL '10' SECOND, INTERVAL '30' SECOND)) GROUP BY window_start, window_end, k",
            "SELECT k, TUMBLE_START(rowtime, INTERVAL '10' SECOND) AS ws, COUNT(*) AS c, MAX(v) AS m FROM records"
                + " GROUP BY TUMBLE(rowtime, INTERVAL '10' SECOND), k",
            "SELECT k, SESSION_START(rowtime, INTERVAL '15' SECOND) AS ws, COUNT(*) AS c FROM records"
                + " GROUP BY SESSION(rowtime, INTERVAL '15' SECOND), k",
            "SELECT o.k, o.v, r.price FROM (SELECT * FROM records WHERE MOD(v, 5) <> 0) o"
                + " JOIN versions FOR SYSTEM_TIME AS OF o.rowtime AS r ON o.k = r.k",
        });
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String dumpNote() {
        return "restore of the snapshot in Flink into a dump view reading every state the snapshot records with its serializers";
    }

    /** The planned keyed operators: planned once per JVM (planning again would number the nodes anew). */
    private Map<String, TypeInformation<?>> plan(Params p) throws Exception {
        if (keyed == null) {
            build(StreamExecutionEnvironment.getExecutionEnvironment(), p);
        }
        return keyed;
    }

    @Override
    public List<KeyedSpec> keyed(Params p) throws Exception {
        List<KeyedSpec> out = new ArrayList<>();
        plan(p).forEach((uid, kt) -> out.add(new KeyedSpec(uid, kt, List.of(), false)));
        return out;
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(Jobs.sourceState(INPUT));
    }

    @Override
    public Map<String, Long> expected(Params p) {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put(RECORDS, p.records);
        if (eventTime) {
            m.put(WINDOWS, closedWindows(p));
        }
        return m;
    }

    /** Results of the TUMBLE query once every split's watermark is its last timestamp - 1. */
    static long closedWindows(Params p) {
        long keys = Jobs.keys(p, 10);
        long watermark = Long.MAX_VALUE;
        for (long part = 0; part < Jobs.PARTITIONS && part < p.records; part++) {
            long last = part + (p.records - 1 - part) / Jobs.PARTITIONS * Jobs.PARTITIONS;
            watermark = Math.min(watermark, last / BLOCK * BLOCK_MS - 1);
        }
        Set<String> results = new HashSet<>();
        for (long r = 0; r < p.records; r++) {
            if ((r / BLOCK + 1) * BLOCK_MS - 1 <= watermark) {
                results.add(r / BLOCK + "/" + r % keys);
            }
        }
        return results.size();
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        long keys = Jobs.keys(p, 10);
        StreamTableEnvironment t = tableEnv(env);
        WatermarkStrategy<Long> w = eventTime
                ? WatermarkStrategy.<Long>forMonotonousTimestamps().withTimestampAssigner((r, ts) -> r / BLOCK * BLOCK_MS)
                : WatermarkStrategy.noWatermarks();
        DataStream<Row> rows = Jobs.source(env, INPUT, p.records, Jobs.PARTITIONS, w)
                .map(new RowDataJob.ToRow(keys)).uid("to-row").name("to-row")
                .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.STRING, Types.LONG))
                .map(new Count<>(RECORDS)).uid("count-records").name("count-records")
                .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.STRING, Types.LONG));
        Schema.Builder s = Schema.newBuilder().column("k", DataTypes.STRING()).column("v", DataTypes.BIGINT());
        if (eventTime) {
            s.columnByMetadata("rowtime", "TIMESTAMP_LTZ(3)").watermark("rowtime", "SOURCE_WATERMARK()");
        } else {
            s.columnByExpression("pt", "PROCTIME()");
        }
        t.createTemporaryView("records", t.fromDataStream(rows, s.build()));
        for (String v : views) {
            t.executeSql(v);
        }
        Map<String, TypeInformation<?>> found = new LinkedHashMap<>();
        for (int i = 0; i < queries.length; i++) {
            DataStream<Row> out = t.toChangelogStream(t.sqlQuery(queries[i]));
            String uid = "results-" + i;
            if (eventTime && i == 0) {
                out = out.map(new Count<>(WINDOWS)).uid("count-" + WINDOWS).name("count-" + WINDOWS);
            }
            out.map(new Discard()).uid(uid).name(uid);
            collectKeyed(out.getTransformation(), found);
        }
        if (keyed == null) {
            keyed = found;
        }
    }

    /** A table environment whose planned operators get uids (table.exec.uid.generation), in UTC. */
    static StreamTableEnvironment tableEnv(StreamExecutionEnvironment env) {
        StreamTableEnvironment t = StreamTableEnvironment.create(env);
        t.getConfig().getConfiguration().setString("table.exec.uid.generation", "ALWAYS");
        t.getConfig().getConfiguration().setString("table.local-time-zone", "UTC");
        return t;
    }

    /** Adds every keyed transformation with a uid, from t up its inputs. */
    static void collectKeyed(Transformation<?> t, Map<String, TypeInformation<?>> found) {
        TypeInformation<?> kt = t instanceof OneInputTransformation ? ((OneInputTransformation<?, ?>) t).getStateKeyType()
                : t instanceof TwoInputTransformation ? ((TwoInputTransformation<?, ?, ?>) t).getStateKeyType() : null;
        if (kt != null && t.getUid() != null) {
            found.putIfAbsent(t.getUid(), kt);
        }
        for (Transformation<?> in : t.getInputs()) {
            collectKeyed(in, found);
        }
    }

    @Override
    public DumpView dumpView() {
        return this::buildDumpView;
    }

    /** One RestoredStateDumper per keyed operator, keyed by its key type, under its uid. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    void buildDumpView(StreamExecutionEnvironment env, Params p) throws Exception {
        DataStream<Long> src = Jobs.source(env, INPUT, p.records, Jobs.PARTITIONS);
        for (Map.Entry<String, TypeInformation<?>> e : plan(p).entrySet()) {
            TypeInformation<RowData> kt = (TypeInformation<RowData>) e.getValue();
            src.map(new RowTypesJob.ToKey()).uid("to-key-" + e.getKey()).returns(kt)
                    .keyBy(new RowTypesJob.Key(kt))
                    .transform(e.getKey(), Types.LONG, new RestoredStateDumper(e.getKey()))
                    .uid(e.getKey());
        }
    }

    /** Counts what passes, for the harness's wait. */
    static final class Count<T> implements MapFunction<T, T> {
        private final String counter;

        Count(String counter) {
            this.counter = counter;
        }

        @Override
        public T map(T v) {
            Dumps.counter(counter).incrementAndGet();
            return v;
        }
    }

    static final class Discard implements MapFunction<Row, Long> {
        @Override
        public Long map(Row r) {
            return 0L;
        }
    }
}
