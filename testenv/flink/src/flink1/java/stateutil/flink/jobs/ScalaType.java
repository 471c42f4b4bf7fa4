package stateutil.flink.jobs;

import java.io.Serializable;
import java.util.Arrays;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/**
 * The type information of one Scala API type, made in Java: it creates the serializer that
 * flink-scala's type information (as the Scala API's macro builds it) creates, and keeps the
 * kind and nested types the dump encoding needs. Overriding only the ExecutionConfig flavour of
 * createSerializer keeps it the same source on Flink 1.15 to 1.20.
 */
final class ScalaType<T> extends TypeInformation<T> {
    private static final long serialVersionUID = 1L;

    enum Kind { CASE_CLASS, OPTION, EITHER, TRY, UNIT, ENUM, COLLECTION, KRYO }

    interface Make<T> extends Serializable {
        TypeSerializer<T> of(ExecutionConfig config);
    }

    final Kind kind;
    final Class<T> typeClass;
    final TypeInformation<?>[] parts;
    private final Make<T> make;

    ScalaType(Kind kind, Class<T> typeClass, Make<T> make, TypeInformation<?>... parts) {
        this.kind = kind;
        this.typeClass = typeClass;
        this.make = make;
        this.parts = parts;
    }

    @Override
    public TypeSerializer<T> createSerializer(ExecutionConfig config) {
        return make.of(config);
    }

    @Override
    public boolean isBasicType() {
        return false;
    }

    @Override
    public boolean isTupleType() {
        return false;
    }

    @Override
    public int getArity() {
        return Math.max(1, parts.length);
    }

    @Override
    public int getTotalFields() {
        return getArity();
    }

    @Override
    public Class<T> getTypeClass() {
        return typeClass;
    }

    @Override
    public boolean isKeyType() {
        return false;
    }

    @Override
    public String toString() {
        return kind + "(" + typeClass.getName() + Arrays.toString(parts) + ")";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ScalaType && toString().equals(o.toString());
    }

    @Override
    public int hashCode() {
        return toString().hashCode();
    }

    @Override
    public boolean canEqual(Object o) {
        return o instanceof ScalaType;
    }
}
