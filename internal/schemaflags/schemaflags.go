// Package schemaflags is --kryo-classes, --proto-descriptors and
// --key-serializers-from: the schemas a user gives, in files, for the
// classes a snapshot only names, and another snapshot of the same job for
// the key serializers a snapshot does not record, for the commands that
// decode values or write snapshots from a source.
package schemaflags

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/internal/flagfile"
	"github.com/stateutil/stateutil/internal/protovalue"
	"github.com/stateutil/stateutil/snapshot"
)

// Error is a flag whose file cannot be read or holds no schema, or flags
// that do not go together: the user's mistake.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func errorf(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

// maxFile bounds what a flag's file is read of.
const maxFile = 64 << 20

// files are what the flags name.
type files struct {
	kryoClasses      string
	protoDescriptors []string
	// writtenOnly keeps of --kryo-classes the classes marked @WrittenBy.
	writtenOnly bool
	// keySerializersFrom is a snapshot, read when a snapshot is opened.
	keySerializersFrom string
}

// kryoClassesHelp is --kryo-classes's help.
const kryoClassesHelp = "FILE: the fields of the classes Kryo writes with its FieldSerializer, the constants of enums, and what a Kryo serializer of your own writes " +
	"(a class marked @WrittenBy, its members the writes in order: '@WrittenBy(com.acme.TokenSerializer.class) final class com.acme.Token { varlong id; String text; }' " +
	"for out.writeVarLong(t.id, true); out.writeString(t.text)), as Java declarations (see docs/flink.md: \"Kryo classes and Protobuf messages\"); without it their values are not decoded"

// keySerializersFromHelp is --key-serializers-from's help.
const keySerializersFromHelp = "SNAPSHOT: a savepoint (or a checkpoint that materialized) of the same job, whose key serializers read the keys of a Flink changelog checkpoint that records none (one not yet materialized): " +
	"operator by operator (same ID), only where none is recorded, and only if every key fits, else refused; a copy written of the checkpoint records them " +
	"(see docs/flink.md: \"Checkpoints that record no key serializer\"); e.g. --key-serializers-from s3://bucket/savepoints/savepoint-1a2b3c"

// AddWritten adds --kryo-classes and --key-serializers-from to c, as Add
// does, for a command that takes of the file only the classes marked
// @WrittenBy (upgrade): what a serializer of the user's own writes, by
// Output calls whose Kryo 5 bytes follow from their Kryo 2 bytes.
func AddWritten(reg **snapshot.Registry, c *cobra.Command) *cobra.Command {
	f := &files{writtenOnly: true}
	c.Flags().StringVar(&f.kryoClasses, "kryo-classes", "", "FILE: what Kryo serializers of your own write, as classes marked @WrittenBy in the file the other commands take "+
		"('@WrittenBy(com.acme.TokenSerializer.class) final class com.acme.Token { varlong id; String text; }' for out.writeVarLong(t.id, true); out.writeString(t.text)), "+
		"so that their values are carried from Kryo 2 to Kryo 5; the file's other classes are not used here (see docs/upgrading.md)")
	c.Flags().StringVar(&f.keySerializersFrom, "key-serializers-from", "", keySerializersFromHelp)
	return f.hook(reg, c, nil)
}

// Add adds the flags to c, which reads snapshots from *reg, and returns c.
// Before c runs, *reg becomes the registry it is now, its codecs and
// snapshots reading by the schemas the flags give. With any of c's flags
// named exclusive set (--plan-only, --yarn), --kryo-classes and
// --proto-descriptors are refused: what that flag hands on runs later,
// elsewhere, without their files. --key-serializers-from, a location, goes
// with them: a plan records it (migrate.ShardPlan.KeySerializersFrom).
func Add(reg **snapshot.Registry, c *cobra.Command, exclusive ...string) *cobra.Command {
	f := &files{}
	fs := c.Flags()
	fs.StringVar(&f.kryoClasses, "kryo-classes", "", kryoClassesHelp)
	fs.StringArrayVar(&f.protoDescriptors, "proto-descriptors", nil, "FILE: a Protobuf FileDescriptorSet (protoc --include_imports --descriptor_set_out=FILE) to decode the messages Kryo writes with chill-protobuf's ProtobufSerializer (repeatable)")
	fs.StringVar(&f.keySerializersFrom, "key-serializers-from", "", keySerializersFromHelp)
	return f.hook(reg, c, exclusive)
}

// hook makes *reg, before c runs, read by the schemas f's flags give.
func (f *files) hook(reg **snapshot.Registry, c *cobra.Command, exclusive []string) *cobra.Command {
	fs := c.Flags()
	base, pre := *reg, c.PreRunE
	c.PreRunE = func(c *cobra.Command, args []string) error {
		if pre != nil {
			if err := pre(c, args); err != nil {
				return err
			}
		}
		s, err := f.read()
		if err != nil {
			return err
		}
		for _, name := range exclusive {
			if v := fs.Lookup(name); (f.kryoClasses != "" || len(f.protoDescriptors) > 0) && v != nil && v.Value.String() != "" {
				return errorf("--kryo-classes and --proto-descriptors go with no --%s: what it hands on runs elsewhere, without their files", name)
			}
		}
		*reg = base.WithSchemas(s)
		return nil
	}
	return c
}

// read reads the schemas the flags give (nil: no flag is given). The
// snapshot --key-serializers-from names is read when a snapshot is opened.
func (f *files) read() (*snapshot.Schemas, error) {
	if f.kryoClasses == "" && len(f.protoDescriptors) == 0 && f.keySerializersFrom == "" {
		return nil, nil
	}
	out := &snapshot.Schemas{KeySerializersFrom: f.keySerializersFrom}
	if f.kryoClasses != "" {
		b, err := readFile("--kryo-classes", f.kryoClasses)
		if err != nil {
			return nil, err
		}
		if out.Classes, err = classlayout.Parse(b, f.kryoClasses); err != nil {
			return nil, errorf("--kryo-classes: %v", err)
		}
		if f.writtenOnly {
			out.Classes = out.Classes.Written()
		}
	}
	if len(f.protoDescriptors) > 0 {
		sets := map[string][]byte{}
		for _, name := range f.protoDescriptors {
			b, err := readFile("--proto-descriptors", name)
			if err != nil {
				return nil, err
			}
			sets[name] = b
		}
		var err error
		if out.Protos, err = protovalue.Parse(sets); err != nil {
			return nil, errorf("--proto-descriptors: %v", err)
		}
	}
	return out, nil
}

func readFile(flag, name string) ([]byte, error) {
	b, err := flagfile.Read(flag, name, maxFile)
	if err != nil {
		return nil, &Error{err.Error()}
	}
	return b, nil
}
