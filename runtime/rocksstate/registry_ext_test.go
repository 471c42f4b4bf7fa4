package rocksstate_test

import (
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// testReg reads the rocksdb format (what the checkpointer writes), on
// local disk and HDFS.
var testReg = formattest.Registry(rocksdb.Register)
