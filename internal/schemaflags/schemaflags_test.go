package schemaflags

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// run runs a command with the flags added, and a --plan-only flag
// excluding them, on args: what it returns, and the registry the command
// ran with (nil: it did not run).
func run(t *testing.T, args ...string) (*snapshot.Registry, *snapshot.Registry, error) {
	t.Helper()
	base := snapshot.NewRegistry(storage.NewRegistry())
	reg := base
	var ran *snapshot.Registry
	c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { ran = reg; return nil }, SilenceUsage: true, SilenceErrors: true}
	c.Flags().String("plan-only", "", "")
	Add(&reg, c, "plan-only")
	c.SetArgs(args)
	return base, ran, c.Execute()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const layout = "final class com.acme.Line {\n  String sku;\n  int qty;\n}\n"

func TestCommandReadsByTheSchemasGiven(t *testing.T) {
	base, ran, err := run(t, "--kryo-classes", writeFile(t, "classes", layout))
	if err != nil {
		t.Fatal(err)
	}
	if ran == nil || ran == base || ran.Codecs.Schemas().Classes.Len() != 1 {
		t.Fatalf("the command ran with %v, want a registry holding com.acme.Line's layout", ran)
	}
	// The snapshot named for key serializers is opened with the snapshot
	// read, as a location.
	base, ran, err = run(t, "--key-serializers-from", "s3://bucket/savepoints/savepoint-1a2b3c")
	if err != nil {
		t.Fatal(err)
	}
	if ran == nil || ran == base || ran.Codecs.Schemas().KeySerializersFrom != "s3://bucket/savepoints/savepoint-1a2b3c" {
		t.Fatalf("the command ran with %v, want a registry naming the savepoint for key serializers", ran)
	}
	base, ran, err = run(t)
	if err != nil || ran != base {
		t.Fatalf("without the flags: ran with %p (%v), want the registry it was given, %p", ran, err, base)
	}
}

func TestBadFilesAreTheUsersMistake(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args []string
		want string
	}{
		"missing":   {[]string{"--kryo-classes", filepath.Join(dir, "none")}, "--kryo-classes: stat " + filepath.Join(dir, "none") + ": no such file"},
		"directory": {[]string{"--kryo-classes", dir}, "is not a regular file"},
		// A FIFO with no writer: opened, it would wait for one forever.
		"fifo":                         {[]string{"--proto-descriptors", fifo}, "--proto-descriptors \"" + fifo + "\" is not a regular file"},
		"bad layout":                   {[]string{"--kryo-classes", writeFile(t, "bad", "class com.acme.A {\n  int x\n}\n")}, ":3: want ';'"},
		"junk protobuf":                {[]string{"--proto-descriptors", writeFile(t, "junk.pb", "\xff\xff\xff")}, "not a FileDescriptorSet"},
		"with plan-only":               {[]string{"--kryo-classes", writeFile(t, "classes", layout), "--plan-only", "plan"}, "--kryo-classes and --proto-descriptors go with no --plan-only"},
		"key serializers and a layout": {[]string{"--key-serializers-from", "savepoint", "--kryo-classes", writeFile(t, "classes", layout), "--plan-only", "plan"}, "go with no --plan-only"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, ran, err := run(t, c.args...)
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an *Error saying %q", err, c.want)
			}
			if ran != nil {
				t.Error("the command ran")
			}
		})
	}
	if _, _, err := run(t, "--plan-only", "plan"); err != nil {
		t.Errorf("--plan-only alone: %v", err)
	}
}

// --key-serializers-from names a location, not a file: a plan records it
// for the shards, so it goes with --plan-only.
func TestKeySerializersFromGoesWithAPlan(t *testing.T) {
	_, ran, err := run(t, "--key-serializers-from", "hdfs://nn:8020/savepoints/savepoint-1a2b3c", "--plan-only", "plan")
	if err != nil {
		t.Fatal(err)
	}
	if ran == nil || ran.Codecs.Schemas().KeySerializersFrom != "hdfs://nn:8020/savepoints/savepoint-1a2b3c" {
		t.Fatalf("the command ran with %v, want a registry naming the savepoint for key serializers", ran)
	}
}

func TestFileOverTheBoundIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, maxFile+1); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, "--kryo-classes", p)
	if err == nil || !strings.Contains(err.Error(), "holds more than") {
		t.Fatalf("got %v, want the file refused as too large", err)
	}
}

// AddWritten takes of the file only the classes marked @WrittenBy, and
// --key-serializers-from as Add does.
func TestAddWrittenTakesOnlyWrittenClasses(t *testing.T) {
	for text, want := range map[string]int{
		layout: 0,
		layout + "@WrittenBy(com.acme.TokenSerializer.class) final class com.acme.Token { varlong id; String text; }\n": 1,
	} {
		base := snapshot.NewRegistry(storage.NewRegistry())
		reg := base
		var ran *snapshot.Registry
		c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { ran = reg; return nil }, SilenceUsage: true, SilenceErrors: true}
		AddWritten(&reg, c)
		c.SetArgs([]string{"--kryo-classes", writeFile(t, "classes", text)})
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		var got *classlayout.Set
		if s := ran.Codecs.Schemas(); s != nil {
			got = s.Classes
		}
		if got.Len() != want {
			t.Errorf("%q: %d classes, want %d", text, got.Len(), want)
		}
		if _, ok := got.Class("com.acme.Line"); ok {
			t.Errorf("%q: the FieldSerializer class is taken", text)
		}
	}
	base := snapshot.NewRegistry(storage.NewRegistry())
	reg := base
	var ran *snapshot.Registry
	c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { ran = reg; return nil }, SilenceUsage: true, SilenceErrors: true}
	AddWritten(&reg, c)
	c.SetArgs([]string{"--key-serializers-from", "savepoint-1a2b3c"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if ran == base || ran.Codecs.Schemas().KeySerializersFrom != "savepoint-1a2b3c" {
		t.Errorf("--key-serializers-from: the command ran with %v, want a registry naming the savepoint", ran)
	}
}
