package stateutil.flink.jobs;

import scala.Enumeration;

/**
 * A Scala {@code Enumeration} object written in Java: Flink's EnumValueSerializer finds it again
 * through its {@code MODULE$} field, as it does a Scala {@code object}. Its ids are the default
 * 0, 1, 2: Flink 1.20's ScalaEnumSerializerSnapshot checks compatibility on restore by taking
 * each recorded id as a position in the values (ids 10, 11, 13 fail the restore with
 * IndexOutOfBoundsException: 10).
 */
public final class ScalaColor extends Enumeration {
    private static final long serialVersionUID = 1L;

    public static final ScalaColor MODULE$ = new ScalaColor();

    public final Enumeration.Value red = Value("red");
    public final Enumeration.Value green = Value("green");
    public final Enumeration.Value blue = Value("blue");

    private ScalaColor() {}
}
