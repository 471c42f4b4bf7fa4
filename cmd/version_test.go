package cmd

import (
	"encoding/json"
	goruntime "runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	out := mustRun(t, "version", "-o", "json")
	var v Version
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v.Go != goruntime.Version() || v.RocksDB != "7.8.3" || v.Version == "" || v.Module != "github.com/stateutil/stateutil" {
		t.Errorf("version: %+v", v)
	}
	formats := map[string]FormatSupport{}
	for _, f := range v.Formats {
		formats[f.Name] = f
	}
	for name, write := range map[string]bool{"memory": true, "filesystem": true, "rocksdb": true, "flink": true} {
		if f, ok := formats[name]; !ok || !f.Read || f.Write != write {
			t.Errorf("format %s: %+v", name, f)
		}
	}
	if len(v.FlinkMetadataRead) != 6 || v.FlinkMetadataRead[0] != 2 || v.FlinkMetadataRead[5] != 7 {
		t.Errorf("flink _metadata versions read: %v", v.FlinkMetadataRead)
	}
	if strings.Join(v.Storages, ",") != "abfs,abfss,file,gs,hdfs,s3,s3a,s3p,wasb,wasbs" {
		t.Errorf("storages: %v", v.Storages)
	}
	table := mustRun(t, "version")
	for _, want := range []string{"stateutil ", "rocksdb:   7.8.3", "reads versions 2, 3, 4, 5, 6, 7", "filesystem (fs, hashmap)"} {
		if !strings.Contains(table, want) {
			t.Errorf("version output lacks %q:\n%s", want, table)
		}
	}
	if line := mustRun(t, "--version"); !strings.HasPrefix(line, "stateutil ") || !strings.Contains(line, "RocksDB 7.8.3") {
		t.Errorf("--version: %q", line)
	}
}
