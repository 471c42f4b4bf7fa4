package rocksdb

import (
	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// testReg knows every format, and local disk and HDFS.
var testReg = formattest.Registry(memory.Register, filesystem.Register, Register, flink.Register)
