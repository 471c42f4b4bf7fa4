package memory

import (
	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// testReg knows every format, and local disk and HDFS.
var testReg = formattest.Registry(Register, filesystem.Register, rocksdb.Register, flink.Register)
