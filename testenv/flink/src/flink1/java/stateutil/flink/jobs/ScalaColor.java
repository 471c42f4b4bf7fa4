package stateutil.flink.jobs;

import scala.Enumeration;

/**
 * A Scala {@code Enumeration} object written in Java: Flink's EnumValueSerializer finds it again
 * through its {@code MODULE$} field, as it does a Scala {@code object}. Ids are not ordinals:
 * they start at 10 and skip one, so a reader that takes them for ordinals goes wrong.
 */
public final class ScalaColor extends Enumeration {
    private static final long serialVersionUID = 1L;

    public static final ScalaColor MODULE$ = new ScalaColor();

    public final Enumeration.Value red = Value(10, "red");
    public final Enumeration.Value green = Value(11, "green");
    public final Enumeration.Value blue = Value(13, "blue");

    private ScalaColor() {}
}
