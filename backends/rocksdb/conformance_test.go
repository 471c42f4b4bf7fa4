package rocksdb_test

import (
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// On local disk through file:// URIs (plain paths are what the other
// tests of the package use).
func TestConformance(t *testing.T) {
	formattest.Run(t, func(t *testing.T) string {
		return "file://" + filepath.Join(t.TempDir(), "savepoint")
	}, rocksdb.Format)
}

func TestConformanceHDFS(t *testing.T) {
	formattest.HDFSAddr(t)
	formattest.RunWith(t, func(t *testing.T) string {
		return formattest.HDFSDir(t) + "/savepoint"
	}, rocksdb.Format, formattest.Config{Seeds: []uint64{1}, MaxParallelisms: []int{4096}})
}

func TestConformanceS3(t *testing.T) {
	formattest.S3Dir(t)
	formattest.RunWith(t, func(t *testing.T) string {
		return formattest.S3Dir(t) + "/savepoint"
	}, rocksdb.Format, formattest.Config{Seeds: []uint64{1}, MaxParallelisms: []int{4096}})
}
