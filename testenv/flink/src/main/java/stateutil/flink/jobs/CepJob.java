package stateutil.flink.jobs;

import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.cep.CEP;
import org.apache.flink.cep.functions.PatternProcessFunction;
import org.apache.flink.cep.nfa.aftermatch.AfterMatchSkipStrategy;
import org.apache.flink.cep.pattern.Pattern;
import org.apache.flink.cep.pattern.conditions.SimpleCondition;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;

import stateutil.flink.Dumps;
import stateutil.flink.Params;

/**
 * A CEP pattern in event time on String keys "c-&lt;r % keys&gt;" (operator uid "cep"):
 * start (r % 3 == 0), followed by one or two middles (r % 3 == 1), followed by an end
 * (r % 9 == 8), skipping past the last event of a match. Most starts wait for their middles
 * and ends when Flink snapshots, so the NFA state holds partial matches and the shared buffer
 * their events and edges; the records after the watermark wait in the operator's element
 * queue, with a timer each. Its output is one line per match.
 */
public final class CepJob extends Witness {
    static final String UID = "cep";

    public CepJob() {
        super("c");
    }

    @Override
    public String name() {
        return "cep";
    }

    @Override
    List<String> keyedUids() {
        return List.of(UID);
    }

    @Override
    public void build(StreamExecutionEnvironment env, Params p) {
        KeyedStream<Long, String> keyed = source(env, p).keyBy(new Key(prefix, keys(p)), Types.STRING);
        Pattern<Long, Long> pattern = Pattern.<Long>begin("start", AfterMatchSkipStrategy.skipPastLastEvent()).where(new Mod(3, 0))
                .followedBy("middle").where(new Mod(3, 1)).times(1, 2)
                .followedBy("end").where(new Mod(9, 8));
        CEP.pattern(keyed, pattern)
                .process(new Matches(), Types.STRING).uid(UID).name(UID)
                .map(new Out()).uid("out-" + UID).name("out-" + UID);
    }

    /** r % mod == rest. */
    static final class Mod extends SimpleCondition<Long> {
        private final long mod, rest;

        Mod(long mod, long rest) {
            this.mod = mod;
            this.rest = rest;
        }

        @Override
        public boolean filter(Long r) {
            return r % mod == rest;
        }
    }

    static final class Matches extends PatternProcessFunction<Long, String> {
        @Override
        public void processMatch(Map<String, List<Long>> match, Context ctx, Collector<String> out) {
            out.collect("start=" + match.get("start") + " middle=" + match.get("middle") + " end=" + match.get("end"));
        }
    }

    static final class Out implements MapFunction<String, String> {
        @Override
        public String map(String s) {
            Dumps.output(1, s);
            return s;
        }
    }
}
