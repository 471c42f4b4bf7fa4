package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/internal/protovalue"
	"github.com/stateutil/stateutil/snapshot"
)

// sourceFlags are how every command that reads a snapshot is told where
// its files are: --path-map for absolute paths a Flink checkpoint records.
type sourceFlags struct {
	pathMap          []string
	skipUnreadable   bool
	flinkVersion     string
	kryoClasses      string
	protoDescriptors []string
	readSchemas      *snapshot.Schemas
}

// addFlinkVersion adds --flink-version, for commands that write snapshots.
func (s *sourceFlags) addFlinkVersion(c *cobra.Command) {
	c.Flags().StringVar(&s.flinkVersion, "flink-version", "", "X.Y: write a Flink savepoint that this Flink version restores, or refuse (exit 4) state it would not: _metadata "+flink.MetadataVersions()+
		"; from the other major version no Kryo state, and only serializers stateutil checked (see docs/flink.md: \"Writing Flink savepoints\"); default: the source's version, 3 written as 4")
}

// readerVersion is --flink-version, checked before anything is read.
func (s *sourceFlags) readerVersion() (string, error) {
	if s.flinkVersion != "" {
		if _, err := flink.MetadataVersionFor(s.flinkVersion); err != nil {
			return "", usageErrorf("--flink-version: %v", err)
		}
	}
	return s.flinkVersion, nil
}

func (s *sourceFlags) add(c *cobra.Command) {
	c.Flags().StringArrayVar(&s.pathMap, "path-map", nil, "OLD=NEW: read recorded absolute state paths starting with OLD under NEW (a Flink checkpoint moved from where it was written; file:, hdfs://, s3://, gs://, abfss://, wasbs:// or plain paths; repeatable, longest OLD wins)")
}

// addSkip adds --skip-unreadable, for commands that copy or compare state.
func (s *sourceFlags) addSkip(c *cobra.Command) {
	c.Flags().BoolVar(&s.skipUnreadable, "skip-unreadable", false, "drop state the source has but stateutil cannot read (listed on stderr) instead of refusing it (exit 4)")
}

// warnDropped lists on w the unreadable state a command left out.
func warnDropped(w io.Writer, dropped []snapshot.UnreadablePart) {
	for _, d := range dropped {
		fmt.Fprintf(w, "stateutil: warning: dropped unreadable %s\n", d)
	}
}

// pathMaps turns --path-map OLD=NEW flags into a map.
func (s *sourceFlags) pathMaps() (map[string]string, error) {
	var out map[string]string
	for _, m := range s.pathMap {
		old, nw, ok := strings.Cut(m, "=")
		if !ok || old == "" || nw == "" {
			return nil, usageErrorf("--path-map %q: want OLD=NEW", m)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[old] = nw
	}
	return out, nil
}

// openOptions are the snapshot open options the flags ask for.
func (s *sourceFlags) openOptions() (snapshot.OpenOptions, error) {
	m, err := s.pathMaps()
	if err != nil {
		return snapshot.OpenOptions{}, err
	}
	sc, err := s.schemas()
	return snapshot.OpenOptions{PathMap: m, Schemas: sc}, err
}

// addSchemas adds --kryo-classes and --proto-descriptors, for commands
// that decode or write values.
func (s *sourceFlags) addSchemas(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&s.kryoClasses, "kryo-classes", "", "FILE: the fields of the classes Kryo writes with its FieldSerializer, and the constants of enums, as Java declarations (see docs/flink.md: \"Kryo classes and Protobuf messages\"); without it their values are not decoded")
	f.StringArrayVar(&s.protoDescriptors, "proto-descriptors", nil, "FILE: a Protobuf FileDescriptorSet (protoc --include_imports --descriptor_set_out=FILE) to decode the messages Kryo writes with chill-protobuf's ProtobufSerializer (repeatable)")
}

// maxSchemaFile bounds what --kryo-classes and --proto-descriptors read.
const maxSchemaFile = 64 << 20

// schemas are the schemas --kryo-classes and --proto-descriptors give, read
// once (nil: none).
func (s *sourceFlags) schemas() (*snapshot.Schemas, error) {
	if s.readSchemas != nil || s.kryoClasses == "" && len(s.protoDescriptors) == 0 {
		return s.readSchemas, nil
	}
	out := &snapshot.Schemas{}
	if s.kryoClasses != "" {
		b, err := readSchemaFile("--kryo-classes", s.kryoClasses)
		if err != nil {
			return nil, err
		}
		if out.Classes, err = classlayout.Parse(b, s.kryoClasses); err != nil {
			return nil, usageErrorf("--kryo-classes: %v", err)
		}
	}
	if len(s.protoDescriptors) > 0 {
		sets := map[string][]byte{}
		for _, name := range s.protoDescriptors {
			b, err := readSchemaFile("--proto-descriptors", name)
			if err != nil {
				return nil, err
			}
			sets[name] = b
		}
		var err error
		if out.Protos, err = protovalue.Parse(sets); err != nil {
			return nil, usageErrorf("--proto-descriptors: %v", err)
		}
	}
	s.readSchemas = out
	return out, nil
}

func readSchemaFile(flag, name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, usageErrorf("%s: %v", flag, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, usageErrorf("%s %q is not a regular file", flag, name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSchemaFile+1))
	if err != nil {
		return nil, usageErrorf("%s: %v", flag, err)
	}
	if len(b) > maxSchemaFile {
		return nil, usageErrorf("%s %q holds more than %d bytes", flag, name, maxSchemaFile)
	}
	return b, nil
}

// registry is e's registry, its codecs and snapshots reading by the
// schemas the flags give.
func (s *sourceFlags) registry(e *env) (*snapshot.Registry, error) {
	sc, err := s.schemas()
	if err != nil {
		return nil, err
	}
	return e.reg.WithSchemas(sc), nil
}
