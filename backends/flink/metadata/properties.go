package metadata

import (
	"fmt"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
)

// CheckpointProperties is what the Java-serialized CheckpointProperties at the
// end of a version 4+ `_metadata` says.
type CheckpointProperties struct {
	// Savepoint is true for savepoints, false for checkpoints.
	Savepoint bool `json:"savepoint"`
	// TypeName is the snapshot type's name ("Checkpoint", "Savepoint",
	// "Terminate Savepoint", ...) or the enum constant of older Flink.
	TypeName string `json:"typeName"`
	// Format is the savepoint format, "CANONICAL" or "NATIVE"; "" for
	// checkpoints.
	Format string `json:"format,omitempty"`
	// SharingFilesStrategy (checkpoints) and PostCheckpointAction
	// (savepoints) are the enum constants stored, when present.
	SharingFilesStrategy string `json:"sharingFilesStrategy,omitempty"`
	PostCheckpointAction string `json:"postCheckpointAction,omitempty"`
	// Flags holds the boolean fields (forced, discardSubsumed, unclaimed...).
	Flags map[string]bool `json:"flags"`
	// Classes and Strings list the class names and strings/enum constants of
	// the stream in order.
	Classes []string `json:"classes"`
	Strings []string `json:"strings"`
}

func checkpointPropertiesFrom(v any, classes, strs []string) *CheckpointProperties {
	o, ok := v.(*javaser.Object)
	if !ok || !strings.HasSuffix(o.Class, ".CheckpointProperties") {
		return nil
	}
	p := &CheckpointProperties{Flags: map[string]bool{}, Classes: classes, Strings: strs}
	for _, f := range o.Fields {
		if b, ok := f.Value.(bool); ok {
			p.Flags[f.Name] = b
		}
	}
	switch t := o.Field("checkpointType").(type) {
	case *javaser.Object:
		p.Savepoint = strings.HasSuffix(t.Class, "SavepointType")
		p.TypeName, _ = t.Field("name").(string)
		if e, ok := t.Field("formatType").(*javaser.Enum); ok {
			p.Format = e.Constant
		}
		if e, ok := t.Field("sharingFilesStrategy").(*javaser.Enum); ok {
			p.SharingFilesStrategy = e.Constant
		}
		if e, ok := t.Field("postCheckpointAction").(*javaser.Enum); ok {
			p.PostCheckpointAction = e.Constant
		}
	case *javaser.Enum:
		// Older Flink stored an enum (CHECKPOINT, SAVEPOINT, SYNC_SAVEPOINT...).
		p.TypeName = t.Constant
		p.Savepoint = strings.Contains(t.Constant, "SAVEPOINT")
	default:
		return nil
	}
	return p
}

// The classes of Flink's CheckpointProperties as it serializes them
// (names, serialVersionUIDs, flags and fields are what Flink 1.15 to 2.x
// write; checked against real savepoints in tests).
const pkgCP = "org.apache.flink.runtime.checkpoint."

var (
	javaEnumClass      = &javaser.OutClass{Name: "java.lang.Enum", Flags: javaser.ScSerializable | javaser.ScEnum}
	formatTypeClass    = &javaser.OutClass{Name: "org.apache.flink.core.execution.SavepointFormatType", Flags: javaser.ScSerializable | javaser.ScEnum, Super: javaEnumClass}
	postActionClass    = &javaser.OutClass{Name: pkgCP + "SavepointType$PostCheckpointAction", Flags: javaser.ScSerializable | javaser.ScEnum, Super: javaEnumClass}
	savepointTypeClass = &javaser.OutClass{Name: pkgCP + "SavepointType", Suid: 0xa087d308a45814b8, Flags: javaser.ScSerializable, Fields: []javaser.OutField{
		{Typ: 'L', Name: "formatType", Sig: "Lorg/apache/flink/core/execution/SavepointFormatType;"},
		{Typ: 'L', Name: "name", Sig: "Ljava/lang/String;"},
		{Typ: 'L', Name: "postCheckpointAction", Sig: "L" + "org/apache/flink/runtime/checkpoint/SavepointType$PostCheckpointAction;"},
	}}
	checkpointPropertiesClass = &javaser.OutClass{Name: pkgCP + "CheckpointProperties", Suid: 2, Flags: javaser.ScSerializable, Fields: []javaser.OutField{
		{Typ: 'Z', Name: "discardCancelled", Sig: ""}, {Typ: 'Z', Name: "discardFailed", Sig: ""}, {Typ: 'Z', Name: "discardFinished", Sig: ""},
		{Typ: 'Z', Name: "discardSubsumed", Sig: ""}, {Typ: 'Z', Name: "discardSuspended", Sig: ""}, {Typ: 'Z', Name: "forced", Sig: ""}, {Typ: 'Z', Name: "unclaimed", Sig: ""},
		{Typ: 'L', Name: "checkpointType", Sig: "Lorg/apache/flink/runtime/checkpoint/SnapshotType;"},
	}}
)

// SavepointProperties is the Java-serialized CheckpointProperties of a
// canonical savepoint: a SavepointType named name ("Savepoint",
// "Suspend Savepoint", ...) with the given post-checkpoint action ("NONE",
// "SUSPEND", "TERMINATE"), format CANONICAL, every discard flag off.
func SavepointProperties(name, action string, forced bool) ([]byte, error) {
	st := &javaser.OutObject{Class: savepointTypeClass, Values: []any{
		&javaser.OutEnum{Class: formatTypeClass, Constant: "CANONICAL"},
		name,
		&javaser.OutEnum{Class: postActionClass, Constant: action},
	}}
	cp := &javaser.OutObject{Class: checkpointPropertiesClass, Values: []any{false, false, false, false, false, forced, false, st}}
	w := javaser.NewWriter()
	w.Object(cp)
	return w.B, w.Err
}

func (p *CheckpointProperties) String() string {
	if p.Savepoint {
		return fmt.Sprintf("savepoint (%s)", p.Format)
	}
	return "checkpoint"
}
