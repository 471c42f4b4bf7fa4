package cmd

import (
	"cmp"
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot"
)

// What a release build (scripts/dist.sh) stamps into the binary with
// -ldflags -X: its version (git describe), the commit it was built from,
// that commit's time (the build's only clock, so that a rebuild is the same
// bytes), and how RocksDB was linked.
var (
	buildVersion string
	buildCommit  string
	buildTime    string
	buildRocksDB string
)

// Version is what `stateutil version` prints.
type Version struct {
	SchemaVersion int    `json:"schema_version"`
	Version       string `json:"version"`
	Module        string `json:"module"`
	// Commit and Built are a release build's source commit and its time.
	Commit string `json:"commit,omitempty"`
	Built  string `json:"built,omitempty"`
	Go     string `json:"go"`
	// RocksDB is the library's version; RocksDBLinked says how it is
	// linked: "shared" (librocksdb.so at run time) or "static" (in the
	// binary, as the compression libraries, in a release build).
	RocksDB       string          `json:"rocksdb"`
	RocksDBLinked string          `json:"rocksdb_linked"`
	Formats       []FormatSupport `json:"formats"`
	// FlinkMetadataRead lists the Flink `_metadata` versions read.
	FlinkMetadataRead []int `json:"flink_metadata_read"`
	// FlinkMetadataWrite lists the Flink `_metadata` versions written.
	FlinkMetadataWrite []int    `json:"flink_metadata_write"`
	Storages           []string `json:"storages"`
}

// FormatSupport is one format and what stateutil does with it.
type FormatSupport struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
	Read    bool     `json:"read"`
	Write   bool     `json:"write"`
	Summary string   `json:"summary"`
}

// moduleVersion is the version the binary was built at: the module's
// version when installed with go install, else the VCS revision.
func moduleVersion() (string, string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(buildVersion, "(unknown)"), "github.com/stateutil/stateutil"
	}
	if buildVersion != "" {
		return buildVersion, info.Main.Path
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		rev, dirty := "", false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		v = "(devel)"
		if rev != "" {
			v = "(devel) " + rev[:min(12, len(rev))]
			if dirty {
				v += "+dirty"
			}
		}
	}
	return v, info.Main.Path
}

func versionOf(reg *snapshot.Registry) *Version {
	v, module := moduleVersion()
	out := &Version{SchemaVersion: 1, Version: v, Module: module, Commit: buildCommit, Built: buildTime, Go: goruntime.Version(),
		RocksDB: rocksdb.LibraryVersion(), RocksDBLinked: cmp.Or(buildRocksDB, "shared"),
		Formats: []FormatSupport{}, FlinkMetadataRead: []int{}, FlinkMetadataWrite: []int{}, Storages: reg.Storage.Schemes()}
	for _, f := range reg.Formats() {
		out.Formats = append(out.Formats, FormatSupport{Name: f.Name, Aliases: append([]string{}, f.Aliases...), Read: f.Open != nil, Write: f.Create != nil, Summary: f.Summary})
	}
	for n := metadata.MinMetadataVersion; n <= metadata.MaxMetadataVersion; n++ {
		out.FlinkMetadataRead = append(out.FlinkMetadataRead, n)
	}
	return out
}

// versionLine is what --version prints.
func versionLine() string {
	v, _ := moduleVersion()
	return fmt.Sprintf("stateutil %s (%s, RocksDB %s)", v, goruntime.Version(), rocksdb.LibraryVersion())
}

type versionOptions struct{ output outputFlag }

func newVersionCommand(e *env) *cobra.Command {
	o := &versionOptions{}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the libraries it was built with and the formats it reads and writes",
		Long: `Print stateutil's version (the module version, or the source revision of a
development build), the Go version and the RocksDB library it was built with, the
snapshot formats it reads and writes, the Apache Flink _metadata versions it reads and
writes, and the storage schemes it knows. -o json is for scripts that depend on them.

` + exitCodeHelp,
		Example: `  stateutil version
  stateutil version -o json
  stateutil --version`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.output.validate(); err != nil {
				return err
			}
			v := versionOf(e.reg)
			if o.output.json() {
				return writeJSON(c.OutOrStdout(), v)
			}
			printVersion(c.OutOrStdout(), v)
			return nil
		},
	}
	o.output.add(c)
	return c
}

func printVersion(w io.Writer, v *Version) {
	fmt.Fprintf(w, "stateutil %s\n", v.Version)
	fmt.Fprintf(w, "module:    %s\n", v.Module)
	if v.Commit != "" {
		fmt.Fprintf(w, "commit:    %s (%s)\n", v.Commit, v.Built)
	}
	fmt.Fprintf(w, "go:        %s\n", v.Go)
	fmt.Fprintf(w, "rocksdb:   %s, %s\n", v.RocksDB, linkedText(v.RocksDBLinked))
	fmt.Fprintf(w, "storages:  %s\n", strings.Join(v.Storages, ", "))
	fmt.Fprintf(w, "flink _metadata: reads versions %s; writes %s\n", ints(v.FlinkMetadataRead), orNone(ints(v.FlinkMetadataWrite)))
	fmt.Fprintln(w, "formats:")
	for _, f := range v.Formats {
		mode := "read"
		if f.Write {
			mode = "read, write"
		}
		name := f.Name
		if len(f.Aliases) > 0 {
			name += " (" + strings.Join(f.Aliases, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-34s %-12s %s\n", name, mode, f.Summary)
	}
}

func linkedText(linked string) string {
	if linked == "static" {
		return "linked in (with its compression libraries)"
	}
	return "shared library"
}

func ints(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
