package stateutil.flink.jobs;

import java.util.ArrayList;
import java.util.List;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.scala.typeutils.EitherTypeInfo;
import org.apache.flink.api.scala.typeutils.EnumValueTypeInfo;
import org.apache.flink.api.scala.typeutils.OptionTypeInfo;
import org.apache.flink.api.scala.typeutils.ScalaCaseClassSerializer;
import org.apache.flink.api.scala.typeutils.TraversableSerializer;
import org.apache.flink.api.scala.typeutils.TryTypeInfo;
import org.apache.flink.api.scala.typeutils.UnitTypeInfo;

import scala.Enumeration;
import scala.Option;
import scala.Product;
import scala.collection.JavaConverters;
import scala.collection.TraversableOnce;
import scala.util.Either;
import scala.util.Left;
import scala.util.Right;
import scala.util.Success;
import scala.util.Try;

import stateutil.flink.Json;
import stateutil.flink.KeyedSpec;
import stateutil.flink.Params;
import stateutil.flink.StateDef;

/**
 * Flink 1.x's Scala API types (flink-scala, Scala 2.12) in keyed value, list and map state, on
 * String keys "scala-&lt;r % keys&gt;": case classes (scala.Tuple2 through the Scala API's
 * Tuple2CaseClassSerializer, scala.Tuple3 through ScalaCaseClassSerializer), Option, Either,
 * Try, Unit, an Enumeration and Scala collections (TraversableSerializer, whose snapshot keeps
 * the CanBuildFrom source it compiles at restore). The type informations are built in Java
 * with flink-scala's classes, as the Scala API's createTypeInformation macro would build them
 * for these types; the serializers and so the bytes are Flink's own.
 */
public final class ScalaJob extends SimpleKeyedJob<String> {
    static {
        Json.register(ScalaJob::json);
    }

    @Override
    public String name() {
        return "scala";
    }

    @Override
    long divisor() {
        return 4;
    }

    @Override
    TypeInformation<String> keyType() {
        return Types.STRING;
    }

    /** scala.Tuple2 through the Scala API's Tuple2CaseClassSerializer. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static <T> TypeInformation<T> tuple2(TypeInformation<?> a, TypeInformation<?> b) {
        TypeInformation<T> flink = (TypeInformation<T>) org.apache.flink.api.scala.package$.MODULE$.createTuple2TypeInformation(a, b);
        return new ScalaType<>(ScalaType.Kind.CASE_CLASS, (Class<T>) (Class<?>) scala.Tuple2.class, flink::createSerializer, a, b);
    }

    /** A case class of class c and field types through ScalaCaseClassSerializer, as the macro makes it. */
    static <T extends Product> TypeInformation<T> caseClass(Class<T> c, TypeInformation<?>... fields) {
        return new ScalaType<>(ScalaType.Kind.CASE_CLASS, c, config -> {
            TypeSerializer<?>[] fs = new TypeSerializer<?>[fields.length];
            for (int i = 0; i < fields.length; i++) {
                fs[i] = fields[i].createSerializer(config);
            }
            return new ScalaCaseClassSerializer<>(c, fs);
        }, fields);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static TypeInformation<Option<?>> option(TypeInformation<?> elem) {
        TypeInformation flink = new OptionTypeInfo(elem);
        return new ScalaType<>(ScalaType.Kind.OPTION, (Class) Option.class, flink::createSerializer, elem);
    }

    /**
     * A Scala collection whose serializer builds instances with the CanBuildFrom for scalaType
     * of elemType (Scala type names), in the source form the macro writes into the snapshot.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static <T> TypeInformation<T> collection(Class<?> c, String scalaType, String elemType, TypeInformation<?> elem) {
        String coll = scalaType + "[" + elemType + "]";
        String cbf = "implicitly[scala.collection.generic.CanBuildFrom[" + coll + ", " + elemType + ", " + coll + "]]";
        return new ScalaType<>(ScalaType.Kind.COLLECTION, (Class<T>) c,
                config -> new TraversableSerializer(elem.createSerializer(config), cbf), elem);
    }

    static final TypeInformation<scala.collection.immutable.List<String>> STRING_LIST =
            collection(scala.collection.immutable.List.class, "scala.collection.immutable.List", "java.lang.String", Types.STRING);
    static final TypeInformation<scala.collection.immutable.Vector<Long>> LONG_VECTOR =
            collection(scala.collection.immutable.Vector.class, "scala.collection.immutable.Vector", "java.lang.Long", Types.LONG);

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    KeyedSpec spec() {
        List<StateDef> s = new ArrayList<>();
        s.add(StateDef.value("tuple2", tuple2(Types.STRING, Types.LONG)));
        s.add(StateDef.value("caseclass", caseClass(scala.Tuple3.class, Types.INT, Types.STRING, option(Types.LONG))));
        s.add(StateDef.value("option", option(Types.STRING)));
        TypeInformation either = new EitherTypeInfo(Either.class, Types.STRING, Types.LONG);
        s.add(StateDef.value("either", new ScalaType<>(ScalaType.Kind.EITHER, Either.class, either::createSerializer, Types.STRING, Types.LONG)));
        TypeInformation tri = new TryTypeInfo(Types.LONG);
        s.add(StateDef.value("try", new ScalaType<>(ScalaType.Kind.TRY, Try.class, tri::createSerializer, Types.LONG)));
        TypeInformation unit = new UnitTypeInfo();
        s.add(StateDef.value("unit", new ScalaType<>(ScalaType.Kind.UNIT, scala.runtime.BoxedUnit.class, unit::createSerializer)));
        TypeInformation color = new EnumValueTypeInfo(ScalaColor.MODULE$, Enumeration.Value.class);
        s.add(StateDef.value("enum", new ScalaType<>(ScalaType.Kind.ENUM, Enumeration.Value.class, color::createSerializer)));
        s.add(StateDef.value("seq", STRING_LIST));
        s.add(StateDef.list("options", option(Types.LONG)));
        s.add(StateDef.list("seqs", STRING_LIST));
        s.add(StateDef.map("vectors", Types.STRING, LONG_VECTOR));
        s.add(StateDef.map("cases", Types.STRING, tuple2(Types.LONG, option(STRING_LIST))));
        // Scala classes in a field Flink gives to Kryo: chill's serializers (flink-scala's
        // FlinkScalaKryoInstantiator registers them).
        TypeInformation kryo = new org.apache.flink.api.java.typeutils.GenericTypeInfo<>(Object.class);
        s.add(StateDef.value("kryo", new ScalaType<>(ScalaType.Kind.KRYO, Object.class, kryo::createSerializer)));
        s.add(StateDef.list("kryos", new ScalaType<>(ScalaType.Kind.KRYO, Object.class, kryo::createSerializer)));
        return new KeyedSpec(KEYED, Types.STRING, s, false);
    }

    @Override
    String key(long r, long keys) {
        return "scala-" + (r % keys);
    }

    static scala.collection.immutable.List<String> list(String... xs) {
        return JavaConverters.asScalaBuffer(List.of(xs)).toList();
    }

    /** An immutable Set: Set1 to Set4 up to four elements, a HashTrieSet from five. */
    static scala.collection.immutable.Set<String> set(String... xs) {
        return JavaConverters.asScalaBuffer(List.of(xs)).toSet();
    }

    /** An immutable Map of key, value, ...: Map1 to Map4 up to four entries, a HashTrieMap from five. */
    static scala.collection.immutable.Map<String, String> map(String... kv) {
        java.util.LinkedHashMap<String, String> m = new java.util.LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return JavaConverters.mapAsScalaMap(m).toMap(scala.Predef.$conforms());
    }

    static java.sql.Timestamp timestamp(long r) {
        java.sql.Timestamp t = new java.sql.Timestamp(r * 1000);
        t.setNanos((int) r * 7);
        return t;
    }

    /**
     * A value under Kryo as stateutil shows it: Strings and Longs plain, anything else with its
     * class; chill writes Some, Left and Right as their value, tuples as their fields (the
     * specialized ones, Tuple2$mcII$sp and the like, as primitives),
     * collections and maps as their elements (a map's are tuples), None and Unit as nothing; the
     * JDK classes Flink registers show as text, milliseconds, or [milliseconds, nanoseconds].
     */
    static Object kryoJson(Object v) {
        if (v == null || v instanceof String || v instanceof Long) {
            return v;
        }
        java.util.TreeMap<String, Object> out = Json.obj();
        out.put("@class", v.getClass().getName());
        if (v instanceof scala.Some) {
            out.put("@value", kryoJson(((scala.Some<?>) v).get()));
        } else if (v instanceof Left) {
            out.put("@value", kryoJson(((Left<?, ?>) v).value()));
        } else if (v instanceof Right) {
            out.put("@value", kryoJson(((Right<?, ?>) v).value()));
        } else if (v instanceof Product && v.getClass().getName().contains("$mc")) {
            // chill's specialized tuples: Int, Long and Double fields, written as primitives.
            List<Object> fields = new ArrayList<>();
            for (Object f : JavaConverters.asJavaIterable(((Product) v).productIterator().toIterable())) {
                fields.add(Json.scalar(f));
            }
            out.put("@value", fields);
        } else if (v instanceof Product && v.getClass().getName().startsWith("scala.Tuple")) {
            List<Object> fields = new ArrayList<>();
            for (Object f : JavaConverters.asJavaIterable(((Product) v).productIterator().toIterable())) {
                fields.add(kryoJson(f));
            }
            out.put("@value", fields);
        } else if (v instanceof scala.collection.Traversable) {
            List<Object> elems = new ArrayList<>();
            for (Object e : JavaConverters.asJavaIterable(((scala.collection.Traversable<?>) v).toIterable())) {
                elems.add(kryoJson(e));
            }
            out.put("@value", elems);
        } else if (v instanceof java.util.UUID || v instanceof java.net.URI) {
            out.put("@value", v.toString());
        } else if (v instanceof java.sql.Timestamp) {
            out.put("@value", List.of(((java.sql.Timestamp) v).getTime(), (long) ((java.sql.Timestamp) v).getNanos()));
        } else if (v instanceof java.util.Date) {
            out.put("@value", ((java.util.Date) v).getTime());
        } else if (v == Option.empty() || v instanceof scala.runtime.BoxedUnit) {
            out.put("@value", List.of());
        } else {
            out.put("@value", Json.scalar(v));
        }
        return out;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    void apply(long r, long keys, List<State> s, Params p) throws Exception {
        ScalaColor c = ScalaColor.MODULE$;
        ((ValueState) s.get(0)).update(new scala.Tuple2<>("t" + r, r));
        ((ValueState) s.get(1)).update(new scala.Tuple3<>((int) r, "c" + r, r % 3 == 0 ? Option.empty() : Option.apply(r * 2)));
        ((ValueState) s.get(2)).update(r % 2 == 0 ? Option.empty() : Option.apply("o" + r));
        ((ValueState) s.get(3)).update(r % 2 == 0 ? new Left<>("l" + r) : new Right<>(r));
        ((ValueState) s.get(4)).update(new Success<>(r));
        ((ValueState) s.get(5)).update(scala.runtime.BoxedUnit.UNIT);
        ((ValueState) s.get(6)).update(r % 3 == 0 ? c.red : r % 3 == 1 ? c.green : c.blue);
        ((ValueState) s.get(7)).update(r % 5 == 0 ? list() : list("a" + r, "b" + r));
        ((ListState) s.get(8)).add(r % 2 == 0 ? Option.empty() : Option.apply(r));
        ((ListState) s.get(9)).add(list("s" + r));
        scala.collection.immutable.Vector<Long> v = (scala.collection.immutable.Vector<Long>) JavaConverters.asScalaBuffer(List.of(r, r + 1)).toVector();
        ((MapState) s.get(10)).put("v" + (r % 2), v);
        ((MapState) s.get(11)).put("k" + (r % 3), new scala.Tuple2<>(r, r % 2 == 0 ? Option.empty() : Option.apply(list("x" + r))));
        ((ValueState) s.get(12)).update(new scala.Tuple6<>(Option.apply("s" + r), r % 2 == 0 ? new Left<>("l" + r) : new Right<>(r),
                list("a" + r, "b" + r), JavaConverters.asScalaBuffer(List.of(r)).toVector(), set("x" + r, "y" + r), map("k" + r, "v" + r)));
        Object[] kinds = {Option.empty(), scala.runtime.BoxedUnit.UNIT, list(), set("a" + r, "b" + r, "c" + r, "d" + r, "e" + r),
                new scala.Tuple2<>(r, "t" + r), map("k1", "a" + r, "k2", "b" + r, "k3", "c" + r, "k4", "d" + r, "k5", "e" + r),
                new java.util.UUID(r, -r), java.net.URI.create("http://h/" + r), timestamp(r), new java.sql.Date(r * 86_400_000L),
                new java.sql.Time(r * 1000), new scala.Tuple2$mcII$sp((int) r, (int) -r), new scala.Tuple2$mcJD$sp(r, r + 0.5),
                new scala.Tuple1$mcJ$sp(r)};
        ((ListState) s.get(13)).add(kinds[(int) (r % kinds.length)]);
    }

    /** The dump encoding of the Scala values: as stateutil shows them. */
    static Object json(Object v, TypeInformation<?> t) {
        if (!(t instanceof ScalaType)) {
            return Json.UNKNOWN;
        }
        ScalaType<?> st = (ScalaType<?>) t;
        switch (st.kind) {
            case OPTION:
                Option<?> o = (Option<?>) v;
                return o.isEmpty() ? null : Json.enc(o.get(), st.parts[0]);
            case EITHER: {
                Either<?, ?> e = (Either<?, ?>) v;
                java.util.TreeMap<String, Object> out = Json.obj();
                if (e.isLeft()) {
                    out.put("left", Json.enc(e.left().get(), st.parts[0]));
                } else {
                    out.put("right", Json.enc(e.right().get(), st.parts[1]));
                }
                return out;
            }
            case TRY: {
                java.util.TreeMap<String, Object> out = Json.obj();
                out.put("success", Json.enc(((Try<?>) v).get(), st.parts[0]));
                return out;
            }
            case UNIT:
                return "()";
            case ENUM:
                return v.toString();
            case COLLECTION: {
                List<Object> out = new ArrayList<>();
                for (Object e : JavaConverters.asJavaIterable(((TraversableOnce<?>) v).toIterable())) {
                    out.add(Json.enc(e, st.parts[0]));
                }
                return out;
            }
            case KRYO:
                return kryoJson(v);
            case CASE_CLASS: {
                Product pr = (Product) v;
                List<Object> out = new ArrayList<>();
                for (int i = 0; i < pr.productArity(); i++) {
                    out.add(Json.enc(pr.productElement(i), st.parts[i]));
                }
                return out;
            }
            default:
                throw new IllegalStateException("kind " + st.kind);
        }
    }
}
