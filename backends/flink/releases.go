package flink

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// What each Flink release line writes and reads, for --flink-version:
// the `_metadata` version, the operator state header version, and which
// serializer snapshots a savepoint may carry to it. Every figure is one
// real Flink showed: what the real-Flink harness's savepoints of 1.15.4
// to 2.3.0 carry and restore (releases_test.go, cmd/flinkversion_test.go),
// and for 1.15 to 1.17 the savepoints Flink's own test resources hold
// too (../shared/fixtures/flink).

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

// Releases are the lines stateutil writes savepoints for, oldest first.
var Releases = []Release{
	{"1.15", 1, 3, 5}, {"1.16", 1, 4, 5}, {"1.17", 1, 4, 5},
	{"1.18", 1, 4, 6}, {"1.19", 1, 4, 6}, {"1.20", 1, 4, 6},
	{"2.0", 2, 5, 6}, {"2.1", 2, 6, 6}, {"2.2", 2, 6, 6}, {"2.3", 2, 6, 6},
}

// ReleaseOf finds the line of a Flink version X.Y (or X.Y.Z).
func ReleaseOf(flinkVersion string) (Release, error) {
	major, rest, _ := strings.Cut(strings.TrimPrefix(flinkVersion, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	mj, err1 := strconv.Atoi(major)
	mn, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil || mj < 0 || mn < 0 {
		return Release{}, fmt.Errorf("version %q of Flink: want X.Y, such as 1.20 or 2.1", flinkVersion)
	}
	line := fmt.Sprintf("%d.%d", mj, mn)
	for _, r := range Releases {
		if r.Line == line {
			return r, nil
		}
	}
	return Release{}, fmt.Errorf("version %q of Flink: stateutil writes savepoints for Flink %s to %s, the lines whose reading it knows",
		flinkVersion, Releases[0].Line, Releases[len(Releases)-1].Line)
}

// MetadataVersionFor is the `_metadata` version written for a Flink
// version: the one its line writes.
func MetadataVersionFor(flinkVersion string) (int, error) {
	r, err := ReleaseOf(flinkVersion)
	return r.Metadata, err
}

// majorOfMetadata is the major Flink version that writes `_metadata` of
// version v: 1 up to 4, 2 from 5 on.
func majorOfMetadata(v int) int {
	if v <= 4 {
		return 1
	}
	return 2
}

// snapshotClass is what stateutil knows of one TypeSerializerSnapshot
// class: the version Flink 1.15 to 2.3 write it with (the same in every
// line of both majors), and whether a savepoint of one major carries it
// to the other.
type snapshotClass struct {
	version int32
	// acrossMajors is "" when Flink of either major restores the other's
	// snapshots and values of this class, else why it cannot.
	acrossMajors string
	// field: a POJO field of this serializer is serialized so in both
	// majors (Flink 2 no longer uses Kryo for List, Map and Set fields).
	field bool
}

const (
	typeutils = "org.apache.flink.api.common.typeutils.base."
	runtimeTU = "org.apache.flink.api.java.typeutils.runtime."
)

// snapshotClasses are the serializer snapshots of the harness's jobs
// (types, basic): byte for byte the same in 1.15.4, 1.16.3, 1.17.2,
// 1.18.1, 1.19.3 and 1.20.5, and in 2.0.2, 2.1.3, 2.2.1 and 2.3.0; across
// the majors only Kryo's differ, and every other one restores from 2.3.0
// in 1.15.4 to 1.20.5 and from 1.20.5 in 2.3.0 with its values intact.
var snapshotClasses = map[string]snapshotClass{
	typeutils + "StringSerializer$StringSerializerSnapshot":                               {version: 3, field: true},
	typeutils + "LongSerializer$LongSerializerSnapshot":                                   {version: 3, field: true},
	typeutils + "IntSerializer$IntSerializerSnapshot":                                     {version: 3, field: true},
	typeutils + "DoubleSerializer$DoubleSerializerSnapshot":                               {version: 3, field: true},
	typeutils + "FloatSerializer$FloatSerializerSnapshot":                                 {version: 3, field: true},
	typeutils + "ShortSerializer$ShortSerializerSnapshot":                                 {version: 3, field: true},
	typeutils + "ByteSerializer$ByteSerializerSnapshot":                                   {version: 3, field: true},
	typeutils + "CharSerializer$CharSerializerSnapshot":                                   {version: 3, field: true},
	typeutils + "BooleanSerializer$BooleanSerializerSnapshot":                             {version: 3, field: true},
	typeutils + "array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot": {version: 3},
	typeutils + "array.IntPrimitiveArraySerializer$IntPrimitiveArraySerializerSnapshot":   {version: 3},
	typeutils + "array.StringArraySerializer$StringArraySerializerSnapshot":               {version: 3},
	typeutils + "EnumSerializer$EnumSerializerSnapshot":                                   {version: 3},
	typeutils + "ListSerializerSnapshot":                                                  {version: 3},
	typeutils + "MapSerializerSnapshot":                                                   {version: 3},
	runtimeTU + "TupleSerializerSnapshot":                                                 {version: 3},
	runtimeTU + "JavaEitherSerializerSnapshot":                                            {version: 3},
	runtimeTU + "RowSerializer$RowSerializerSnapshot":                                     {version: 3},
	runtimeTU + "PojoSerializerSnapshot":                                                  {version: 2},
	runtimeTU + "kryo.KryoSerializerSnapshot": {version: 2, acrossMajors: "Flink 1.x serializes with Kryo 2 and Flink 2.x with Kryo 5, " +
		"whose values and registered serializers differ (stateutil upgrade rewrites them for Flink 2.x)"},
	"org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot":                         {version: 3},
	"org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot": {version: 3},
	"org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot":               {version: 3},
	"org.apache.flink.streaming.api.operators.TimerSerializerSnapshot":                       {version: 3},
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

// checkWrite refuses, before anything is written, a snapshot with keyed
// state whose key serializer's snapshot it does not have, and one whose
// serializer snapshots the Flink of opts.ReaderVersion would not restore:
// across majors, every snapshot (nested ones too) must be one of
// snapshotClasses that restores across them, of its version, and parsed
// whole; within a major, those classes must have no newer version than
// the lines write (others, such as a job's own serializers, are not
// checked there).
func checkWrite(s *snapshot.Snapshot, opts snapshot.WriteOptions) error {
	for _, op := range s.Operators {
		if co, err := carriedOf(op); err == nil && co != nil && len(op.KeyedStates) > 0 && len(co.KeySerializer) == 0 {
			return fmt.Errorf("operator %q: %w: its key serializer is not recorded, and a savepoint must name it: "+
				"a changelog checkpoint taken before the state backend first materialized its state records none (Flink takes the job's; "+
				"--key-serializers-from SNAPSHOT takes it from a savepoint of the same job), and Flink 1.3 to 1.6 recorded it in a form stateutil does not write; "+
				"take a savepoint, or a checkpoint after the first materialization", op.Label(), snapshot.ErrUnsupportedVersion)
		}
	}
	if opts.ReaderVersion == "" {
		return nil
	}
	to, err := ReleaseOf(opts.ReaderVersion)
	if err != nil {
		return err
	}
	cs := carriedSnapshotOf(s)
	if cs == nil {
		return nil // the writer refuses it (ErrNotFromFlink)
	}
	c := &restoreCheck{to: to, from: majorOfMetadata(cs.MetadataVersion)}
	for _, op := range s.Operators {
		co, err := carriedOf(op)
		if err != nil || co == nil {
			continue // the writer refuses it
		}
		c.operator(op, co)
	}
	if len(c.refused) > 0 {
		return &RestoreError{Line: to.Line, Reason: fmt.Sprintf("in this Flink %d.x snapshot, %s", c.from, strings.Join(c.refused, "; "))}
	}
	return nil
}

type restoreCheck struct {
	to      Release
	from    int
	refused []string
}

func (c *restoreCheck) operator(op *snapshot.Operator, co *carriedOperator) {
	if len(op.KeyedStates) > 0 {
		c.serializer(op, "key serializer", "", co.KeySerializer)
	}
	for _, ks := range op.KeyedStates {
		c.meta(op, "keyed state", ks.Name, co.Keyed)
	}
	for _, os := range op.OperatorStates {
		in := co.Operator
		if os.Mode == snapshot.Broadcast {
			in = co.Broadcast
		}
		c.meta(op, "operator state", os.Name, in)
	}
}

func (c *restoreCheck) meta(op *snapshot.Operator, what, name string, in []carriedMeta) {
	for _, m := range in {
		if m.Name != name {
			continue
		}
		for _, s := range m.Serializers {
			c.serializer(op, what, name, s.Raw)
		}
	}
}

func (c *restoreCheck) serializer(op *snapshot.Operator, what, name string, raw []byte) {
	where := fmt.Sprintf("operator %q %s", op.Label(), what)
	if name != "" {
		where += fmt.Sprintf(" %q", name)
	}
	s, err := parseSerializerSnapshot(raw)
	if err != nil {
		if c.from != c.to.Major {
			c.refused = append(c.refused, fmt.Sprintf("%s has a serializer snapshot stateutil cannot read (%v)", where, err))
		}
		return
	}
	if why := c.why(s, false); why != "" {
		c.refused = append(c.refused, where+" has "+why)
	}
}

// why is the reason Flink c.to would not restore s, "" if it would.
func (c *restoreCheck) why(s *typeser.SerializerSnapshot, pojoField bool) string {
	if s == nil {
		return "a missing serializer snapshot"
	}
	k, known := snapshotClasses[s.Class]
	across := c.from != c.to.Major
	switch {
	case across && pojoField && !k.field:
		return fmt.Sprintf("a POJO field of serializer %s, which Flink %d.x may serialize otherwise (Flink 2 no longer uses Kryo for List, Map and Set fields; stateutil upgrade rewrites them for Flink 2.x)", s.Class, c.to.Major)
	case across && s.Opaque && len(s.Nested) == 0:
		return fmt.Sprintf("serializer %s, whose snapshot stateutil cannot read whole to check it", s.Class)
	case !known && across:
		return fmt.Sprintf("serializer %s (snapshot version %d), not one stateutil has checked across Flink's major versions", s.Class, s.Version)
	case known && across && s.Version != k.version, known && s.Version > k.version:
		return fmt.Sprintf("serializer %s of snapshot version %d, where Flink 1.15 to 2.3 write version %d", s.Class, s.Version, k.version)
	case known && across && k.acrossMajors != "":
		return fmt.Sprintf("serializer %s: %s", s.Class, k.acrossMajors)
	}
	pojo := s.Class == runtimeTU+"PojoSerializerSnapshot"
	for _, n := range s.Nested {
		if why := c.why(n, pojo); why != "" {
			return why
		}
	}
	return ""
}

// MetadataVersions says which `_metadata` version is written for which
// lines: "v3 for 1.15, v4 for 1.16-1.20, ...".
func MetadataVersions() string {
	var parts []string
	for i := 0; i < len(Releases); {
		j := i
		for j+1 < len(Releases) && Releases[j+1].Metadata == Releases[i].Metadata {
			j++
		}
		lines := Releases[i].Line
		if j > i {
			lines += "-" + Releases[j].Line
		}
		parts = append(parts, fmt.Sprintf("v%d for %s", Releases[i].Metadata, lines))
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
