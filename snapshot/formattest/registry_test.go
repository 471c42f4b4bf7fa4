package formattest_test

import (
	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// testReg knows every format, and local disk, HDFS and S3.
var testReg = formattest.Registry(memory.Register, filesystem.Register, rocksdb.Register, flink.Register)
