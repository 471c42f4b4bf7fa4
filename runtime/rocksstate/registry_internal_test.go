package rocksstate

import (
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

var tInt64 = snapshot.Type{Name: snapshot.TypeInt64}

// testReg reads the rocksdb format (what the checkpointer writes), on
// local disk and HDFS.
var testReg = formattest.Registry(rocksdb.Register)
