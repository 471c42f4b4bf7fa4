package formattest_test

import (
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// The memory format lives in backends/memory; its run of the suite is
// here, with the suite, for local disk, HDFS and S3.

func memoryFormat(t *testing.T) *snapshot.Format {
	f, err := testReg.Lookup(memory.Name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestMemoryConformance(t *testing.T) {
	formattest.Run(t, func(t *testing.T) string {
		return filepath.Join(t.TempDir(), "snapshot.dump")
	}, memoryFormat(t))
}

func TestMemoryConformanceHDFS(t *testing.T) {
	formattest.HDFSAddr(t)
	formattest.RunWith(t, func(t *testing.T) string {
		return formattest.HDFSDir(t) + "/snapshot.dump"
	}, memoryFormat(t), formattest.Config{Seeds: []uint64{1, 2}})
}

func TestMemoryConformanceS3(t *testing.T) {
	formattest.S3Dir(t)
	formattest.RunWith(t, func(t *testing.T) string {
		return formattest.S3Dir(t) + "/snapshot.dump"
	}, memoryFormat(t), formattest.Config{Seeds: []uint64{1, 2}})
}
