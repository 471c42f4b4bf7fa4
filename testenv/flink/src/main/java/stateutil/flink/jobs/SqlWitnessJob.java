package stateutil.flink.jobs;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamStatementSet;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.functions.ScalarFunction;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

import stateutil.flink.Dumps;
import stateutil.flink.Job;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;
import stateutil.flink.PartitionSource;
import stateutil.flink.RestoredStateDumper;
import stateutil.flink.RestoredStateDumper2;

/**
 * SQL operators the older jobs do not run, over {@code records(k, v)} of the main source
 * (k = "k" + r % keys, v = r, keys = N/10; event time r seconds where the job has it):
 *
 * <ul>
 *   <li>{@code sqlops}: a join with no equality ({@code a.v < b.v}) and a CROSS JOIN (the
 *       planner keys both by an empty row, at parallelism and max parallelism 1); FIRST_VALUE,
 *       LAST_VALUE, LISTAGG, MAX, COLLECT, JSON_OBJECTAGG and ARRAY_AGG over an updating input
 *       (their retracting accumulators and data views); an upsert source (a changelog stream
 *       of UPDATE_AFTER and DELETE rows with a primary key: ChangelogNormalize) written to a
 *       sink keyed by another column (SinkUpsertMaterializer, forced).
 *   <li>{@code sqlevents}: MATCH_RECOGNIZE with partial matches pending, an interval join,
 *       OVER aggregates with ROWS and with RANGE, window Top-N, window deduplication and a
 *       window join (TUMBLE). The ROWS aggregate's results pass a function that waits
 *       {@link Dumps#throttleMillis} per row: records back up in its channels for an
 *       unaligned checkpoint.
 *   <li>{@code sqlbatch}: mini-batch two-phase aggregation with split distinct aggregates. The
 *       global aggregates' result rows wait {@link Dumps#throttleMillis} each in their task:
 *       the incremental aggregates' rows back up in its channels for an unaligned checkpoint.
 * </ul>
 *
 * Every keyed operator the planner makes is found in the planned graph; its dump comes from a
 * dump view in which a {@link RestoredStateDumper} takes its place: the same uid, parallelism,
 * max parallelism, input types and key selectors, reading every state and timer the snapshot
 * records with the snapshot's serializers (the harness restores an unaligned checkpoint into
 * the view without its records in flight). Outputs (continue): every query's changelog, as a signed
 * multiset of rows (sqlops's aggregates over an updating input as {@link #orderFree} shows them).
 */
public final class SqlWitnessJob implements Job {
    static final String INPUT = "input", RECORDS = "records";

    private final String name;
    private final boolean eventTime;
    private final Map<String, String> config;
    private final String[] views, queries, inserts;
    /** The queries (by index) whose outputs are recorded order-free ({@link #orderFree}). */
    private final Set<Integer> arrivalOrdered;
    /** Whether each result row waits {@link Dumps#throttleMillis} in its query's last task. */
    private final boolean slowResults;
    /** The keyed transformations of the plan made in this JVM (uid to transformation). */
    private transient volatile Map<String, Transformation<?>> keyed;

    private SqlWitnessJob(String name, boolean eventTime, Map<String, String> config, String[] views, String[] queries, String[] inserts,
            Set<Integer> arrivalOrdered, boolean slowResults) {
        this.name = name;
        this.arrivalOrdered = arrivalOrdered;
        this.slowResults = slowResults;
        this.eventTime = eventTime;
        this.config = config;
        this.views = views;
        this.queries = queries;
        this.inserts = inserts;
    }

    static SqlWitnessJob ops() {
        return new SqlWitnessJob("sqlops", false, Map.of("table.exec.sink.upsert-materialize", "FORCE"), new String[] {
            "CREATE TEMPORARY VIEW a AS SELECT k, v FROM records WHERE MOD(v, 10) = 0",
            "CREATE TEMPORARY VIEW b AS SELECT k, v FROM records WHERE MOD(v, 10) = 5",
            "CREATE TEMPORARY VIEW latest AS SELECT k, MOD(CAST(SUBSTRING(k FROM 2) AS INT), 3) AS g, LAST_VALUE(v) AS lv,"
                + " CONCAT('s', CAST(MAX(v) AS STRING)) AS ls FROM records GROUP BY k",
            "CREATE TEMPORARY TABLE by_k (k STRING, id STRING, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole')",
        }, new String[] {
            "SELECT a.k, a.v, b.v AS bv FROM a JOIN b ON a.v < b.v",
            "SELECT a.k, b.k AS bk FROM a CROSS JOIN b",
            "SELECT g, FIRST_VALUE(lv) AS fv, LAST_VALUE(lv) AS lav, LISTAGG(ls) AS la, MAX(lv) AS mx, COLLECT(ls) AS co,"
                + " JSON_OBJECTAGG(KEY ls VALUE lv) AS jo, ARRAY_AGG(lv) AS aa FROM latest GROUP BY g",
        }, new String[] {
            "INSERT INTO by_k SELECT k, id, v FROM upserts",
        }, Set.of(2), false);
    }

    static SqlWitnessJob events() {
        return new SqlWitnessJob("sqlevents", true, Map.of(), new String[] {
            "CREATE TEMPORARY VIEW a AS SELECT k, v, rowtime FROM records WHERE MOD(v, 2) = 0",
            "CREATE TEMPORARY VIEW b AS SELECT k, v, rowtime FROM records WHERE MOD(v, 3) = 0",
        }, new String[] {
            "SELECT * FROM records MATCH_RECOGNIZE (PARTITION BY k ORDER BY rowtime MEASURES A.v AS av, LAST(B.v) AS bv, C.v AS cv"
                + " ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B{1,2} C)"
                + " DEFINE A AS MOD(A.v, 3) = 0, B AS MOD(B.v, 3) = 1, C AS MOD(C.v, 9) = 8)",
            "SELECT a.k, a.v, b.v AS bv FROM a JOIN b ON a.k = b.k AND a.rowtime BETWEEN b.rowtime - INTERVAL '30' SECOND AND b.rowtime + INTERVAL '30' SECOND",
            // slow(s): a Calc chained after the OVER aggregate, which holds its task up per row while
            // an unaligned checkpoint is taken, so records wait in the aggregate's channels.
            "SELECT k, v, slow(s) AS s FROM (SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY rowtime ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM records)",
            "SELECT k, v, COUNT(v) OVER (PARTITION BY k ORDER BY rowtime RANGE BETWEEN INTERVAL '60' SECOND PRECEDING AND CURRENT ROW) AS c FROM records",
            "SELECT * FROM (SELECT window_start, window_end, k, c, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY c DESC, k) AS rn"
                + " FROM (SELECT window_start, window_end, k, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE records, DESCRIPTOR(rowtime), INTERVAL '20' SECOND))"
                + " GROUP BY window_start, window_end, k)) WHERE rn <= 2",
            "SELECT * FROM (SELECT window_start, window_end, k, v, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, k ORDER BY rowtime DESC) AS rn"
                + " FROM TABLE(TUMBLE(TABLE records, DESCRIPTOR(rowtime), INTERVAL '30' SECOND))) WHERE rn = 1",
            "SELECT l.k, l.window_start, l.v, r.v AS rv FROM (SELECT * FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR(rowtime), INTERVAL '20' SECOND))) l"
                + " JOIN (SELECT * FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(rowtime), INTERVAL '20' SECOND))) r"
                + " ON l.window_start = r.window_start AND l.window_end = r.window_end AND l.k = r.k",
        }, new String[0], Set.of(), false);
    }

    static SqlWitnessJob batch() {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("table.exec.mini-batch.enabled", "true");
        c.put("table.exec.mini-batch.allow-latency", "100 ms");
        c.put("table.exec.mini-batch.size", "50");
        c.put("table.optimizer.agg-phase-strategy", "TWO_PHASE");
        c.put("table.optimizer.distinct-agg.split.enabled", "true");
        c.put("table.optimizer.distinct-agg.split.bucket-num", "4");
        return new SqlWitnessJob("sqlbatch", false, c, new String[0], new String[] {
            "SELECT k, COUNT(DISTINCT MOD(v, 7)) AS d7, SUM(v) AS s, MAX(v) AS m FROM records GROUP BY k",
            "SELECT MOD(v, 5) AS g, COUNT(DISTINCT k) AS dk, COUNT(*) AS c FROM records GROUP BY MOD(v, 5)",
        }, new String[0], Set.of(), true);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String dumpNote() {
        return "restore of the snapshot in Flink into a dump view whose dumpers take the planner operators' places (uids, inputs, key selectors) and read every state the snapshot records with its serializers";
    }

    @Override
    public Map<String, Long> expected(Params p) {
        return Map.of(RECORDS, p.records);
    }

    @Override
    public List<KeyedSpec> keyed(Params p) throws Exception {
        return List.of();
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(Jobs.sourceState(INPUT));
    }

    private Map<String, Transformation<?>> plan(Params p) throws Exception {
        if (keyed == null) {
            build(StreamExecutionEnvironment.getExecutionEnvironment(), p);
        }
        return keyed;
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        long keys = Jobs.keys(p, 10);
        StreamTableEnvironment t = SqlJob.tableEnv(env);
        config.forEach((k, v) -> t.getConfig().getConfiguration().setString(k, v));
        WatermarkStrategy<Long> w = eventTime
                ? WatermarkStrategy.<Long>forMonotonousTimestamps().withTimestampAssigner((r, ts) -> r * 1000)
                : WatermarkStrategy.noWatermarks();
        DataStream<Long> src = Jobs.source(env, INPUT, p.records, Jobs.PARTITIONS, w);
        DataStream<Row> rows = src.map(new RowDataJob.ToRow(keys)).uid("to-row").name("to-row")
                .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.STRING, Types.LONG))
                .map(new SqlJob.Count<>(RECORDS)).uid("count-records").name("count-records")
                .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.STRING, Types.LONG));
        Schema.Builder s = Schema.newBuilder().column("k", DataTypes.STRING()).column("v", DataTypes.BIGINT());
        if (eventTime) {
            s.columnByMetadata("rowtime", "TIMESTAMP_LTZ(3)").watermark("rowtime", "SOURCE_WATERMARK()");
        }
        t.createTemporaryView("records", t.fromDataStream(rows, s.build()));
        t.createTemporarySystemFunction("slow", Slow.class);
        if (inserts.length > 0) {
            DataStream<Row> ups = src.map(new ToUpsert(keys)).uid("to-upsert").name("to-upsert")
                    .returns(Types.ROW_NAMED(new String[] {"id", "k", "v"}, Types.STRING, Types.STRING, Types.LONG));
            t.createTemporaryView("upserts", t.fromChangelogStream(ups, Schema.newBuilder().column("id", DataTypes.STRING().notNull())
                    .column("k", DataTypes.STRING()).column("v", DataTypes.BIGINT()).primaryKey("id").build(), ChangelogMode.upsert()));
        }
        for (String v : views) {
            t.executeSql(v);
        }
        for (int i = 0; i < queries.length; i++) {
            t.toChangelogStream(t.sqlQuery(queries[i])).map(new Out("q" + i, arrivalOrdered.contains(i), slowResults)).uid("results-" + i).name("results-" + i);
        }
        if (inserts.length > 0) {
            StreamStatementSet ss = t.createStatementSet();
            for (String ins : inserts) {
                ss.addInsertSql(ins);
            }
            ss.attachAsDataStream();
        }
        Map<String, Transformation<?>> found = new LinkedHashMap<>();
        Set<Transformation<?>> seen = new HashSet<>();
        ArrayDeque<Transformation<?>> todo = new ArrayDeque<>(env.getTransformations());
        while (!todo.isEmpty()) {
            Transformation<?> tr = todo.pop();
            if (!seen.add(tr)) {
                continue;
            }
            TypeInformation<?> kt = tr instanceof OneInputTransformation ? ((OneInputTransformation<?, ?>) tr).getStateKeyType()
                    : tr instanceof TwoInputTransformation ? ((TwoInputTransformation<?, ?, ?>) tr).getStateKeyType() : null;
            if (kt != null && tr.getUid() != null) {
                found.putIfAbsent(tr.getUid(), tr);
            }
            todo.addAll(tr.getInputs());
        }
        if (keyed == null) {
            keyed = found;
        }
    }

    @Override
    public DumpView dumpView() {
        return this::buildDumpView;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    void buildDumpView(StreamExecutionEnvironment env, Params p) throws Exception {
        Jobs.source(env, INPUT, p.records, Jobs.PARTITIONS).map(new Nothing()).uid("discard-" + INPUT).returns(Types.LONG);
        for (Map.Entry<String, Transformation<?>> e : plan(p).entrySet()) {
            String uid = e.getKey();
            Transformation<?> tr = e.getValue();
            SingleOutputStreamOperator<Long> d;
            if (tr instanceof OneInputTransformation) {
                OneInputTransformation ot = (OneInputTransformation) tr;
                DataStream in = empty(env, uid + "-in", ot.getInputType());
                d = new KeyedStream(in, ot.getStateKeySelector(), ot.getStateKeyType())
                        .transform(uid, Types.LONG, (OneInputStreamOperator) new RestoredStateDumper<>(uid));
            } else {
                TwoInputTransformation tt = (TwoInputTransformation) tr;
                DataStream in1 = empty(env, uid + "-in1", tt.getInputType1());
                DataStream in2 = empty(env, uid + "-in2", tt.getInputType2());
                d = in1.connect(in2).keyBy((KeySelector) tt.getStateKeySelector1(), (KeySelector) tt.getStateKeySelector2(), tt.getStateKeyType())
                        .transform(uid, Types.LONG, (TwoInputStreamOperator) new RestoredStateDumper2<>(uid));
            }
            d.uid(uid);
            if (tr.getParallelism() > 0) {
                d.setParallelism(tr.getParallelism());
            }
            if (tr.getMaxParallelism() > 0) {
                d.setMaxParallelism(tr.getMaxParallelism());
            }
        }
    }

    /** A stream of the given type that has no records (a source the snapshot does not know). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static DataStream<?> empty(StreamExecutionEnvironment env, String uid, TypeInformation<?> type) {
        return env.fromSource(new PartitionSource(uid, 0, 1), WatermarkStrategy.noWatermarks(), uid).uid(uid)
                .flatMap((FlatMapFunction) new None()).uid(uid + "-typed").returns((TypeInformation) type);
    }

    /** The identity, waiting {@link Dumps#throttleMillis} first. */
    public static final class Slow extends ScalarFunction {
        public Long eval(Long v) throws InterruptedException {
            Dumps.throttle();
            return v;
        }
    }

    static final class None implements FlatMapFunction<Long, Object> {
        @Override
        public void flatMap(Long r, Collector<Object> out) {}
    }

    static final class Nothing implements MapFunction<Long, Long> {
        @Override
        public Long map(Long r) {
            return r;
        }
    }

    /** Upserts: row "id-(r % 13)" set to (k, r), deleted by every seventh record. */
    static final class ToUpsert implements MapFunction<Long, Row> {
        private final long keys;

        ToUpsert(long keys) {
            this.keys = keys;
        }

        @Override
        public Row map(Long rec) {
            long r = rec;
            Row row = Row.withNames(r % 7 == 6 ? RowKind.DELETE : RowKind.UPDATE_AFTER);
            row.setField("id", "id-" + (r % 13));
            row.setField("k", "k" + (r % keys));
            row.setField("v", r);
            return row;
        }
    }

    /**
     * A query's changelog as outputs: +1 for an insertion or update after, -1 for a retraction;
     * slow: each row waits {@link Dumps#throttleMillis} first.
     */
    static final class Out implements MapFunction<Row, Long> {
        private final String query;
        private final boolean orderFree, slow;

        Out(String query, boolean orderFree, boolean slow) {
            this.query = query;
            this.orderFree = orderFree;
            this.slow = slow;
        }

        @Override
        public Long map(Row r) throws InterruptedException {
            if (slow) {
                Dumps.throttle();
            }
            int sign = r.getKind() == RowKind.INSERT || r.getKind() == RowKind.UPDATE_AFTER ? 1 : -1;
            Row plain = Row.copy(r);
            plain.setKind(RowKind.INSERT);
            Dumps.output(sign, query + " " + (orderFree ? orderFree(plain) : plain.toString()));
            return 0L;
        }
    }

    private static final Pattern JSON_MEMBER = Pattern.compile("\"([^\"]*)\":([^,}]*)");

    /**
     * A result row of sqlops's aggregates over {@code latest} (g, FIRST_VALUE, LAST_VALUE, LISTAGG,
     * MAX, COLLECT, JSON_OBJECTAGG, ARRAY_AGG) as text that does not depend on the order its
     * input rows came in. The rows of one group's keys reach the aggregate from several subtasks
     * of {@code latest}, in the order the network gives: another one on each run, and at another
     * parallelism. So FIRST_VALUE and LAST_VALUE show whether their value is among the group's
     * (ARRAY_AGG's), and the lists and maps are sorted.
     */
    static String orderFree(Row r) {
        Object[] aa = (Object[]) r.getField(7);
        List<Object> values = aa == null ? List.of() : Arrays.asList(aa);
        String la = (String) r.getField(3);
        String[] listed = la == null ? new String[0] : la.split(",");
        Arrays.sort(listed);
        Map<?, ?> co = (Map<?, ?>) r.getField(5);
        TreeMap<String, String> jo = new TreeMap<>();
        String json = (String) r.getField(6);
        if (json != null) {
            Matcher m = JSON_MEMBER.matcher(json);
            while (m.find()) {
                jo.put(m.group(1), m.group(2));
            }
        }
        return "[" + r.getField(0) + ", first among values " + values.contains(r.getField(1)) + ", last among values " + values.contains(r.getField(2))
                + ", " + String.join(",", listed) + ", " + r.getField(4) + ", " + (co == null ? null : new TreeMap<>(co)) + ", " + jo + ", "
                + values.stream().map(String::valueOf).sorted().toList() + "]";
    }
}
