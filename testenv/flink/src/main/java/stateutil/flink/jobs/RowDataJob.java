package stateutil.flink.jobs;

import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

import stateutil.flink.DumpingKeyedOperator;
import stateutil.flink.Dumps;
import stateutil.flink.Job;
import stateutil.flink.KeyedSpec;
import stateutil.flink.OperatorStateSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * A SQL aggregation with RowData keys:
 * {@code SELECT k, COUNT(*), SUM(v), MAX(v) FROM records GROUP BY k} over the main source
 * (k = "k" + r % keys, v = r). Table operators get uids from
 * {@code table.exec.uid.generation=ALWAYS} (format {@code <id>_<transformation>}; the id is the
 * planner's node number, the same whenever the query is planned once in a fresh JVM, which the
 * harness does): the aggregation's uid is found in the planned graph ("3_group-aggregate" on
 * 1.18 to 2.3) and recorded in the manifest. Its keyed state is ValueState "accState" of the
 * accumulators (count, sum, max; nullable BIGINTs) keyed by the RowData (k).
 *
 * <p>Table operators cannot dump themselves, so this job's dumps come from a restore: a
 * DataStream job with the same source, a keyBy on the same RowData key and a dumping
 * operator with the aggregation's uid and state descriptor (the "dump view").
 */
public final class RowDataJob implements Job {
    /** The aggregation's uid, as planned in this JVM (see {@link #aggUid}). */
    private static volatile String aggUid;
    /** The main source's uid ("source" is the uid the planner gives the table scan). */
    static final String INPUT = "input";
    static final String RESULTS = "results";

    @Override
    public String name() {
        return "rowdata";
    }

    @Override
    public String dumpNote() {
        return "restore of the snapshot in Flink into a dump view (Table operators cannot dump themselves)";
    }

    static RowType keyType() {
        return RowType.of(new LogicalType[] {new VarCharType(true, VarCharType.MAX_LENGTH)}, new String[] {"k"});
    }

    static RowType accType() {
        return RowType.of(new BigIntType(true), new BigIntType(true), new BigIntType(true));
    }

    /** The aggregation's uid: planned once per JVM (planning again would number the nodes anew). */
    public String aggUid(Params p) throws Exception {
        if (aggUid == null) {
            build(StreamExecutionEnvironment.getExecutionEnvironment(), p);
        }
        return aggUid;
    }

    @Override
    public List<KeyedSpec> keyed(Params p) throws Exception {
        return List.of(new KeyedSpec(aggUid(p), InternalTypeInfo.of(keyType()),
                List.of(StateDef.value("accState", InternalTypeInfo.of(accType()))), false));
    }

    @Override
    public List<OperatorStateSpec> operatorStates(Params p) {
        return List.of(Jobs.sourceState(INPUT));
    }

    @Override
    public Map<String, Long> expected(Params p) {
        return Map.of(RESULTS, p.records);
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        long keys = Jobs.keys(p, 10);
        StreamTableEnvironment t = StreamTableEnvironment.create(env);
        t.getConfig().getConfiguration().setString("table.exec.uid.generation", "ALWAYS");
        t.createTemporaryView("records", Jobs.source(env, INPUT, p.records, Jobs.PARTITIONS)
                .map(new ToRow(keys)).uid("to-row").name("to-row")
                .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.STRING, Types.LONG)));
        Table agg = t.sqlQuery("SELECT k, COUNT(*) AS c, SUM(v) AS s, MAX(v) AS m FROM records GROUP BY k");
        org.apache.flink.streaming.api.datastream.DataStream<Row> out = t.toChangelogStream(agg);
        out.map(new CountResults()).uid(RESULTS).name(RESULTS);
        if (aggUid == null) {
            Transformation<?> found = find(out.getTransformation(), x -> x.getUid() != null && x.getUid().endsWith("_group-aggregate"));
            aggUid = found == null ? null : found.getUid();
        }
    }

    /** The first transformation, from t up its inputs, that test accepts; null if none does. */
    static Transformation<?> find(Transformation<?> t, Predicate<Transformation<?>> test) {
        if (test.test(t)) {
            return t;
        }
        for (Transformation<?> in : t.getInputs()) {
            Transformation<?> found = find(in, test);
            if (found != null) {
                return found;
            }
        }
        return null;
    }

    @Override
    public DumpView dumpView() {
        return this::buildDumpView;
    }

    /** The dump view: restores the aggregation's keyed state and dumps it. */
    void buildDumpView(StreamExecutionEnvironment env, Params p) throws Exception {
        KeyedSpec spec = keyed(p).get(0);
        Jobs.source(env, INPUT, p.records, Jobs.PARTITIONS)
                .map(new ToRowData()).uid("to-rowdata").returns(InternalTypeInfo.of(keyType()))
                .keyBy(new RowKey())
                .transform(spec.uid, Types.LONG, new DumpingKeyedOperator<>(new Nothing(), spec))
                .uid(spec.uid);
    }

    static final class ToRow implements MapFunction<Long, Row> {
        private final long keys;

        ToRow(long keys) {
            this.keys = keys;
        }

        @Override
        public Row map(Long r) {
            return Row.of("k" + (r % keys), r);
        }
    }

    /** Every input record gives the aggregation exactly one +I or +U result. */
    static final class CountResults implements MapFunction<Row, Row> {
        @Override
        public Row map(Row r) {
            if (r.getKind() == RowKind.INSERT || r.getKind() == RowKind.UPDATE_AFTER) {
                Dumps.counter(RESULTS).incrementAndGet();
            }
            return r;
        }
    }

    static final class ToRowData implements MapFunction<Long, RowData> {
        @Override
        public RowData map(Long r) {
            return GenericRowData.of(StringData.fromString("k" + r));
        }
    }

    static final class RowKey implements KeySelector<RowData, RowData>, ResultTypeQueryable<RowData> {
        @Override
        public RowData getKey(RowData r) {
            return r;
        }

        @Override
        public org.apache.flink.api.common.typeinfo.TypeInformation<RowData> getProducedType() {
            return InternalTypeInfo.of(keyType());
        }
    }

    static final class Nothing extends KeyedProcessFunction<RowData, RowData, Long> {
        @Override
        public void processElement(RowData r, Context ctx, Collector<Long> out) {}
    }
}
