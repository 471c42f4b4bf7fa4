package flink

import (
	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// testReg knows every format, and local disk and HDFS.
var testReg = formattest.Registry(Register, memory.Register, filesystem.Register, rocksdb.Register)
