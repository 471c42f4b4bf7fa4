package releases

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// Release is one Flink release line.
type Release struct {
	// Line is "X.Y".
	Line  string
	Major int
	// Metadata is the `_metadata` version the line writes, the newest it
	// reads (Flink reads every older version too).
	Metadata int
	// OperatorHeader is the newest OperatorBackendSerializationProxy
	// version the line reads: 5 before 1.18, whose version 6 added the
	// compression flag (Flink 1.17.2 refuses 6: "Incompatible version:
	// found 6, compatible versions are [5, 4, 3, 2, 1]").
	OperatorHeader int
}

// Lines are the release lines stateutil writes savepoints for, oldest
// first.
var Lines = []Release{
	{"1.15", 1, 3, 5}, {"1.16", 1, 4, 5}, {"1.17", 1, 4, 5},
	{"1.18", 1, 4, 6}, {"1.19", 1, 4, 6}, {"1.20", 1, 4, 6},
	{"2.0", 2, 5, 6}, {"2.1", 2, 6, 6}, {"2.2", 2, 6, 6}, {"2.3", 2, 6, 6},
}

// Of finds the line of a Flink version X.Y (or X.Y.Z).
func Of(flinkVersion string) (Release, error) {
	major, rest, _ := strings.Cut(strings.TrimPrefix(flinkVersion, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	mj, err1 := strconv.Atoi(major)
	mn, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil || mj < 0 || mn < 0 {
		return Release{}, fmt.Errorf("version %q of Flink: want X.Y, such as 1.20 or 2.1", flinkVersion)
	}
	line := fmt.Sprintf("%d.%d", mj, mn)
	for _, r := range Lines {
		if r.Line == line {
			return r, nil
		}
	}
	return Release{}, fmt.Errorf("version %q of Flink: stateutil writes savepoints for Flink %s to %s, the lines whose reading it knows",
		flinkVersion, Lines[0].Line, Lines[len(Lines)-1].Line)
}

// MetadataVersionFor is the `_metadata` version written for a Flink
// version: the one its line writes.
func MetadataVersionFor(flinkVersion string) (int, error) {
	r, err := Of(flinkVersion)
	return r.Metadata, err
}

// MajorOfMetadata is the major Flink version that writes `_metadata` of
// version v: 1 up to 4, 2 from 5 on.
func MajorOfMetadata(v int) int {
	if v <= 4 {
		return 1
	}
	return 2
}

// Class is what stateutil knows of one TypeSerializerSnapshot class: the
// version Flink 1.15 to 2.3 write it with (the same in every line of both
// majors), and whether a savepoint of one major carries it to the other.
type Class struct {
	Version int32
	// AcrossMajors is "" when Flink of either major restores the other's
	// snapshots and values of this class, else why it cannot.
	AcrossMajors string
	// Field: a POJO field of this serializer is serialized so in both
	// majors (Flink 2 no longer uses Kryo for List, Map and Set fields).
	Field bool
}

const (
	typeutils = "org.apache.flink.api.common.typeutils.base."
	runtimeTU = "org.apache.flink.api.java.typeutils.runtime."
)

// Classes are the serializer snapshots of the harness's jobs
// (types, basic): byte for byte the same in 1.15.4, 1.16.3, 1.17.2,
// 1.18.1, 1.19.3 and 1.20.5, and in 2.0.2, 2.1.3, 2.2.1 and 2.3.0; across
// the majors only Kryo's differ, and every other one restores from 2.3.0
// in 1.15.4 to 1.20.5 and from 1.20.5 in 2.3.0 with its values intact.
var Classes = map[string]Class{
	typeutils + "StringSerializer$StringSerializerSnapshot":                               {Version: 3, Field: true},
	typeutils + "LongSerializer$LongSerializerSnapshot":                                   {Version: 3, Field: true},
	typeutils + "IntSerializer$IntSerializerSnapshot":                                     {Version: 3, Field: true},
	typeutils + "DoubleSerializer$DoubleSerializerSnapshot":                               {Version: 3, Field: true},
	typeutils + "FloatSerializer$FloatSerializerSnapshot":                                 {Version: 3, Field: true},
	typeutils + "ShortSerializer$ShortSerializerSnapshot":                                 {Version: 3, Field: true},
	typeutils + "ByteSerializer$ByteSerializerSnapshot":                                   {Version: 3, Field: true},
	typeutils + "CharSerializer$CharSerializerSnapshot":                                   {Version: 3, Field: true},
	typeutils + "BooleanSerializer$BooleanSerializerSnapshot":                             {Version: 3, Field: true},
	typeutils + "array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot": {Version: 3},
	typeutils + "array.IntPrimitiveArraySerializer$IntPrimitiveArraySerializerSnapshot":   {Version: 3},
	typeutils + "array.StringArraySerializer$StringArraySerializerSnapshot":               {Version: 3},
	typeutils + "EnumSerializer$EnumSerializerSnapshot":                                   {Version: 3},
	typeutils + "ListSerializerSnapshot":                                                  {Version: 3},
	typeutils + "MapSerializerSnapshot":                                                   {Version: 3},
	runtimeTU + "TupleSerializerSnapshot":                                                 {Version: 3},
	runtimeTU + "JavaEitherSerializerSnapshot":                                            {Version: 3},
	runtimeTU + "RowSerializer$RowSerializerSnapshot":                                     {Version: 3},
	runtimeTU + "PojoSerializerSnapshot":                                                  {Version: 2},
	runtimeTU + "kryo.KryoSerializerSnapshot": {Version: 2, AcrossMajors: "Flink 1.x serializes with Kryo 2 and Flink 2.x with Kryo 5, " +
		"whose values and registered serializers differ (stateutil upgrade rewrites them for Flink 2.x)"},
	"org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot":                         {Version: 3},
	"org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot": {Version: 3},
	"org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot":               {Version: 3},
	"org.apache.flink.streaming.api.operators.TimerSerializerSnapshot":                       {Version: 3},
}

// Summary says which `_metadata` version is written for which lines:
// "v3 for 1.15, v4 for 1.16-1.20, ...".
func Summary() string {
	var parts []string
	for i := 0; i < len(Lines); {
		j := i
		for j+1 < len(Lines) && Lines[j+1].Metadata == Lines[i].Metadata {
			j++
		}
		lines := Lines[i].Line
		if j > i {
			lines += "-" + Lines[j].Line
		}
		parts = append(parts, fmt.Sprintf("v%d for %s", Lines[i].Metadata, lines))
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// RestoreError reports a savepoint that the Flink it would be written for
// would not restore: it is refused before anything is written.
type RestoreError struct {
	Line   string // the release line asked for
	Reason string
}

func (e *RestoreError) Error() string {
	return fmt.Sprintf("Flink %s would not restore this savepoint: %s; nothing was written", e.Line, e.Reason)
}

// Unwrap lets errors.Is(err, snapshot.ErrUnsupportedVersion) succeed.
func (e *RestoreError) Unwrap() error { return snapshot.ErrUnsupportedVersion }

// WhyNot is the reason Flink of line to would not restore serializer
// snapshot s (nested ones too) of a savepoint of Flink major from, "" if
// it would: across majors s must be one of Classes that restores across
// them, of its version, and parsed whole; within a major it must have no
// newer version than the lines write (a class not in Classes, such as a
// job's own serializer, is not checked there). pojoField says s is a POJO
// field's serializer.
func WhyNot(to Release, from int, s *typeser.SerializerSnapshot, pojoField bool) string {
	if s == nil {
		return "a missing serializer snapshot"
	}
	k, known := Classes[s.Class]
	across := from != to.Major
	switch {
	case across && pojoField && !k.Field:
		return fmt.Sprintf("a POJO field of serializer %s, which Flink %d.x may serialize otherwise (Flink 2 no longer uses Kryo for List, Map and Set fields; stateutil upgrade rewrites them for Flink 2.x)", s.Class, to.Major)
	case across && s.Opaque && len(s.Nested) == 0:
		return fmt.Sprintf("serializer %s, whose snapshot stateutil cannot read whole to check it", s.Class)
	case !known && across:
		return fmt.Sprintf("serializer %s (snapshot version %d), not one stateutil has checked across Flink's major versions", s.Class, s.Version)
	case known && across && s.Version != k.Version, known && s.Version > k.Version:
		return fmt.Sprintf("serializer %s of snapshot version %d, where Flink 1.15 to 2.3 write version %d", s.Class, s.Version, k.Version)
	case known && across && k.AcrossMajors != "":
		return fmt.Sprintf("serializer %s: %s", s.Class, k.AcrossMajors)
	}
	pojo := s.Class == runtimeTU+"PojoSerializerSnapshot"
	for _, n := range s.Nested {
		if why := WhyNot(to, from, n, pojo); why != "" {
			return why
		}
	}
	return ""
}
