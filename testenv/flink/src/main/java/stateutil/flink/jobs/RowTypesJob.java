package stateutil.flink.jobs;

import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

import stateutil.flink.DumpingKeyedOperator;
import stateutil.flink.Dumps;
import stateutil.flink.Job;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * A SQL regular join that keeps whole rows of every logical type in state: a view {@code wide}
 * computes, from each record, one column of each type (CHAR, VARCHAR, BOOLEAN, BINARY,
 * VARBINARY, DECIMAL(10,2) and DECIMAL(30,5), TINYINT to BIGINT, FLOAT, DOUBLE, DATE, TIME,
 * TIMESTAMP(3/6/9), TIMESTAMP_LTZ(3/6), both INTERVALs, ARRAY, MAP, a nested named ROW, an INT that
 * is always null; the planner drops constant columns from state, so none is constant), and {@code SELECT w.*, n.v2 FROM wide w JOIN narrow n ON w.k = n.k2} joins it with the
 * narrow (k2, v2) of the same records. Neither side has a unique key, so the join keeps
 * MapState "left-records" and "right-records" of RowData rows to their counts, keyed by the
 * RowData (k). The join's uid, key type and row types come from the planned graph.
 *
 * <p>Its dumps come from a restore into a dump view, as the rowdata job's.
 */
public final class RowTypesJob implements Job {
    private static volatile String joinUid;
    private static volatile TypeInformation<?> keyType, leftType, rightType;
    static final String INPUT = "input";
    static final String RESULTS = "results";

    @Override
    public String name() {
        return "rowtypes";
    }

    @Override
    public String dumpNote() {
        return "restore of the snapshot in Flink into a dump view (Table operators cannot dump themselves)";
    }

    private void plan(Params p) throws Exception {
        if (joinUid == null) {
            build(StreamExecutionEnvironment.getExecutionEnvironment(), p);
        }
    }

    @Override
    public List<KeyedSpec> keyed(Params p) throws Exception {
        plan(p);
        return List.of(new KeyedSpec(joinUid, keyType, List.of(
                StateDef.map("left-records", leftType, Types.INT),
                StateDef.map("right-records", rightType, Types.INT)), false));
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(Jobs.sourceState(INPUT));
    }

    @Override
    public Map<String, Long> expected(Params p) {
        long keys = Jobs.keys(p, 10);
        long joined = 0;
        for (long k = 0; k < keys; k++) {
            long n = p.records / keys + (k < p.records % keys ? 1 : 0);
            joined += n * n;
        }
        return Map.of(RESULTS, joined);
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        long keys = Jobs.keys(p, 10);
        StreamTableEnvironment t = SqlJob.tableEnv(env);
        t.createTemporaryView("records", Jobs.source(env, INPUT, p.records, Jobs.PARTITIONS)
                .map(new RowDataJob.ToRow(keys)).uid("to-row").name("to-row")
                .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.STRING, Types.LONG)));
        t.executeSql("CREATE TEMPORARY VIEW wide AS SELECT k,"
                + " CAST(k AS CHAR(4)) AS c, CONCAT(k, '-a-longer-string') AS vc, MOD(v, 2) = 0 AS b,"
                + " CAST(k AS BINARY(3)) AS bin, CAST(CONCAT(k, '-bytes-longer') AS VARBINARY(64)) AS vb,"
                + " CAST(CAST(v AS DOUBLE) / 4 AS DECIMAL(10, 2)) AS d10, CAST(v AS DECIMAL(30, 5)) * -1000000000 - 0.5 AS d30,"
                + " CAST(MOD(v, 100) AS TINYINT) AS ti, CAST(v AS SMALLINT) AS si, CAST(v AS INT) AS i, v * 1000000000 AS bi,"
                + " CAST(v AS FLOAT) + CAST(0.5 AS FLOAT) AS f, CAST(v AS DOUBLE) + 0.25 AS dbl,"
                + " TIMESTAMPADD(DAY, CAST(v AS INT), DATE '2024-02-28') AS dt,"
                + " TIMESTAMPADD(SECOND, CAST(v AS INT), TIME '12:34:56') AS tm,"
                + " TIMESTAMPADD(SECOND, CAST(v AS INT), TIMESTAMP '2024-01-01 00:00:00.123') AS ts3,"
                + " TIMESTAMPADD(SECOND, CAST(v AS INT), CAST(TIMESTAMP '2024-01-01 00:00:00.123456' AS TIMESTAMP(6))) AS ts6,"
                + " TIMESTAMPADD(SECOND, CAST(v AS INT), CAST(TIMESTAMP '1969-12-31 23:59:59.123456789' AS TIMESTAMP(9))) AS ts9,"
                + " TO_TIMESTAMP_LTZ(v * 1000 + 7, 3) AS ltz3,"
                + " CAST(TIMESTAMPADD(SECOND, CAST(v AS INT), CAST(TIMESTAMP '2024-01-01 00:00:00.654321' AS TIMESTAMP(6))) AS TIMESTAMP_LTZ(6)) AS ltz6,"
                + " CASE WHEN MOD(v, 3) = 0 THEN INTERVAL '1-2' YEAR TO MONTH ELSE INTERVAL '0-5' YEAR TO MONTH END AS iym,"
                + " CASE WHEN MOD(v, 3) = 0 THEN INTERVAL '1 02:03:04.567' DAY TO SECOND(3) ELSE INTERVAL '0.001' SECOND(3) END AS idt,"
                + " ARRAY[v, v + 1, CAST(NULL AS BIGINT)] AS arr, ARRAY[k, CONCAT(k, '-a-longer-element')] AS sarr,"
                + " MAP[k, v, 'other-key', CAST(NULL AS BIGINT)] AS mp,"
                + " CAST(ROW(k, v, ARRAY[CAST(v AS INT)]) AS ROW<name STRING, n BIGINT, ints ARRAY<INT>>) AS nested,"
                + " CASE WHEN v < 0 THEN CAST(v AS INT) END AS nul"
                + " FROM records");
        Table joined = t.sqlQuery("SELECT w.*, n.v2 FROM wide w JOIN (SELECT k AS k2, v AS v2 FROM records) n ON w.k = n.k2");
        DataStream<Row> out = t.toChangelogStream(joined);
        out.map(new CountResults()).uid(RESULTS).name(RESULTS);
        if (joinUid == null) {
            TwoInputTransformation<?, ?, ?> join = (TwoInputTransformation<?, ?, ?>) RowDataJob.find(out.getTransformation(),
                    x -> x instanceof TwoInputTransformation && x.getUid() != null && x.getUid().endsWith("_join"));
            if (join == null) {
                throw new IllegalStateException("no join in the planned graph");
            }
            keyType = join.getStateKeyType();
            leftType = join.getInputType1();
            rightType = join.getInputType2();
            joinUid = join.getUid();
        }
    }

    @Override
    public DumpView dumpView() {
        return this::buildDumpView;
    }

    /** The dump view: restores the join's keyed state and dumps it. */
    void buildDumpView(StreamExecutionEnvironment env, Params p) throws Exception {
        KeyedSpec spec = keyed(p).get(0);
        @SuppressWarnings("unchecked")
        TypeInformation<RowData> kt = (TypeInformation<RowData>) spec.keyType;
        Jobs.source(env, INPUT, p.records, Jobs.PARTITIONS)
                .map(new ToKey()).uid("to-rowdata").returns(kt)
                .keyBy(new Key(kt))
                .transform(spec.uid, Types.LONG, new DumpingKeyedOperator<>(new RowDataJob.Nothing(), spec))
                .uid(spec.uid);
    }

    /** Every pair of joined records gives one +I result. */
    static final class CountResults implements MapFunction<Row, Row> {
        @Override
        public Row map(Row r) {
            if (r.getKind() == RowKind.INSERT) {
                Dumps.counter(RESULTS).incrementAndGet();
            }
            return r;
        }
    }

    static final class ToKey implements MapFunction<Long, RowData> {
        @Override
        public RowData map(Long r) {
            return GenericRowData.of(StringData.fromString("k" + r));
        }
    }

    static final class Key implements KeySelector<RowData, RowData>, ResultTypeQueryable<RowData> {
        private final TypeInformation<RowData> type;

        Key(TypeInformation<RowData> type) {
            this.type = type;
        }

        @Override
        public RowData getKey(RowData r) {
            return r;
        }

        @Override
        public TypeInformation<RowData> getProducedType() {
            return type;
        }
    }
}
