package flink

import (
	"fmt"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	"github.com/stateutil/stateutil/backends/flink/internal/releases"
	"github.com/stateutil/stateutil/snapshot"
)

// The Flink release lines the writer writes for (package releases), and
// the check that refuses what the line asked for would not restore.

// Release is one Flink release line.
type Release = releases.Release

// Releases are the lines stateutil writes savepoints for, oldest first.
var Releases = releases.Lines

// ReleaseOf finds the line of a Flink version X.Y (or X.Y.Z).
func ReleaseOf(flinkVersion string) (Release, error) { return releases.Of(flinkVersion) }

// MetadataVersionFor is the `_metadata` version written for a Flink
// version: the one its line writes.
func MetadataVersionFor(flinkVersion string) (int, error) {
	return releases.MetadataVersionFor(flinkVersion)
}

// MetadataVersions says which `_metadata` version is written for which
// lines: "v3 for 1.15, v4 for 1.16-1.20, ...".
func MetadataVersions() string { return releases.Summary() }

// RestoreError reports a savepoint that the Flink it would be written for
// would not restore (releases.RestoreError).
type RestoreError = releases.RestoreError

// checkWrite refuses, before anything is written, a snapshot with keyed
// state whose key serializer's snapshot it does not have, and one whose
// serializer snapshots the Flink of opts.ReaderVersion would not restore:
// across majors, every snapshot (nested ones too) must be one of
// releases.Classes that restores across them, of its version, and parsed
// whole; within a major, those classes must have no newer version than
// the lines write (others, such as a job's own serializers, are not
// checked there).
func checkWrite(s *snapshot.Snapshot, opts snapshot.WriteOptions) error {
	for _, op := range s.Operators {
		if co, err := carried.OperatorOf(op); err == nil && co != nil && len(op.KeyedStates) > 0 && len(co.KeySerializer) == 0 {
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
	cs := carried.SnapshotOf(s)
	if cs == nil {
		return nil // the writer refuses it (ErrNotFromFlink)
	}
	c := &restoreCheck{to: to, from: releases.MajorOfMetadata(cs.MetadataVersion)}
	for _, op := range s.Operators {
		co, err := carried.OperatorOf(op)
		if err != nil || co == nil {
			continue // the writer refuses it
		}
		c.operator(op, co)
	}
	if len(c.refused) > 0 {
		return &releases.RestoreError{Line: to.Line, Reason: fmt.Sprintf("in this Flink %d.x snapshot, %s", c.from, strings.Join(c.refused, "; "))}
	}
	return nil
}

type restoreCheck struct {
	to      Release
	from    int
	refused []string
}

func (c *restoreCheck) operator(op *snapshot.Operator, co *carried.Operator) {
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

func (c *restoreCheck) meta(op *snapshot.Operator, what, name string, in []carried.Meta) {
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
	s, err := carried.ParseSerializerSnapshot(serializers, raw)
	if err != nil {
		if c.from != c.to.Major {
			c.refused = append(c.refused, fmt.Sprintf("%s has a serializer snapshot stateutil cannot read (%v)", where, err))
		}
		return
	}
	if why := releases.WhyNot(c.to, c.from, s, false); why != "" {
		c.refused = append(c.refused, where+" has "+why)
	}
}
