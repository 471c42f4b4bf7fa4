package flink

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

var rewriteCoverage = flag.Bool("rewrite-coverage", false, "rewrite docs/serializers.md from testdata/flink-serializers.tsv")

// TestSerializerCoverage writes the coverage table, docs/serializers.md:
// every serializer snapshot class that Flink's own modules ship (as
// scripts/flink-serializer-classes.sh listed them from the release jars),
// and what stateutil does with its values, asked of the decoders and
// encoders themselves (typeser.Table.Support). It fails where the table
// committed differs from what the code does now.
func TestSerializerCoverage(t *testing.T) {
	root := flinkharness.RepoRoot()
	classes, err := readSerializerClasses(filepath.Join(root, "testdata", "flink-serializers.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(classes) == 0 {
		t.Fatal("testdata/flink-serializers.tsv lists no classes")
	}
	got := coverageTable(classes)
	path := filepath.Join(root, "docs", "serializers.md")
	if *rewriteCoverage {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("docs/serializers.md is not what the code does now (%v): go test ./backends/flink -run TestSerializerCoverage -rewrite-coverage", err)
	}
}

// serializerClass is one class of the listing: the module that ships it
// and the releases it is in.
type serializerClass struct {
	name, module string
	versions     []string
}

func readSerializerClasses(path string) ([]*serializerClass, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byName := map[string]*serializerClass{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s: %q: want VERSION, MODULE, CLASS", path, line)
		}
		c := byName[parts[2]]
		if c == nil {
			c = &serializerClass{name: parts[2], module: parts[1]}
			byName[parts[2]] = c
		}
		c.versions = append(c.versions, parts[0])
	}
	out := make([]*serializerClass, 0, len(byName))
	for _, c := range byName {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *serializerClass) int {
		return strings.Compare(a.module+" "+a.name, b.module+" "+b.name)
	})
	return out, sc.Err()
}

func coverageTable(classes []*serializerClass) []byte {
	var b bytes.Buffer
	counts := map[string]int{}
	var rows bytes.Buffer
	module := ""
	for _, c := range classes {
		if c.module != module {
			module = c.module
			fmt.Fprintf(&rows, "\n### %s\n\n| serializer snapshot | releases | values | kind | note |\n|---|---|---|---|---|\n", module)
		}
		sup := serializers.Support(c.name)
		status := "not decoded"
		switch {
		case sup.Decoded && sup.Encoded:
			status = "decoded + encoded"
		case sup.Decoded:
			status = "decoded only"
		}
		counts[status]++
		kind := sup.Kind
		if sup.Family != "" {
			kind += " (" + sup.Family + ")"
		}
		fmt.Fprintf(&rows, "| `%s` | %s | %s | %s | %s |\n", c.name, releaseSpan(c.versions), status, kind, sup.Note)
	}
	fmt.Fprintf(&b, "# Serializer coverage\n\n")
	fmt.Fprintf(&b, "Every serializer snapshot class that Apache Flink's own modules ship (flink-core, flink-java,\n"+
		"flink-streaming-java, flink-runtime, flink-table-common, flink-table-runtime, flink-cep, flink-scala,\n"+
		"flink-avro, flink-protobuf), in the releases of each minor from 1.15 to 2.3, and what stateutil does\n"+
		"with the values of its serializer: decodes them (`get`, `dump`, `verify` ...) and writes them back\n"+
		"(`put`, `load`, the writers), decodes them only, or does not decode them (they are kept and shown as\n"+
		"bytes, never damage). The classes come from the release jars (`scripts/flink-serializer-classes.sh`,\n"+
		"`testdata/flink-serializers.tsv`); the status from stateutil's decoders and encoders themselves\n"+
		"(`TestSerializerCoverage` in `backends/flink` writes this page and fails where it differs).\n\n")
	fmt.Fprintf(&b, "| values | classes |\n|---|---|\n")
	for _, s := range []string{"decoded + encoded", "decoded only", "not decoded"} {
		fmt.Fprintf(&b, "| %s | %d |\n", s, counts[s])
	}
	b.Write(rows.Bytes())
	return b.Bytes()
}

// releaseSpan names the releases a class is in, as a range where they
// follow each other in the listing.
func releaseSpan(vs []string) string {
	if len(vs) == 1 {
		return vs[0]
	}
	return vs[0] + " – " + vs[len(vs)-1]
}
