package filesystem_test

import (
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

func fsFormat(t *testing.T) *snapshot.Format {
	t.Helper()
	f, err := testReg.Lookup(filesystem.Name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestConformance(t *testing.T) {
	formattest.Run(t, func(t *testing.T) string {
		return filepath.Join(t.TempDir(), "snapshot")
	}, fsFormat(t))
}

func TestConformanceFileURI(t *testing.T) {
	formattest.RunWith(t, func(t *testing.T) string {
		return "file://" + filepath.Join(t.TempDir(), "job", "chk-3")
	}, fsFormat(t), formattest.Config{Seeds: []uint64{4}})
}

func TestConformanceHDFS(t *testing.T) {
	formattest.HDFSAddr(t)
	formattest.RunWith(t, func(t *testing.T) string {
		return formattest.HDFSDir(t) + "/job/chk-1"
	}, fsFormat(t), formattest.Config{Seeds: []uint64{1, 2}})
}

func TestConformanceS3(t *testing.T) {
	formattest.S3Dir(t)
	formattest.RunWith(t, func(t *testing.T) string {
		return formattest.S3Dir(t) + "/job/chk-1"
	}, fsFormat(t), formattest.Config{Seeds: []uint64{1, 2}})
}
