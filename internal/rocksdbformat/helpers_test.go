package rocksdbformat

import (
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

var (
	tString = snapshot.Type{Name: snapshot.TypeString}
	tInt64  = snapshot.Type{Name: snapshot.TypeInt64}
	tVoid   = snapshot.Type{Name: snapshot.TypeVoid}
	tBytes  = snapshot.Type{Name: snapshot.TypeBytes}
)

// testReg knows local disk and HDFS (and no format: the formats import
// this package).
var testReg = formattest.Registry()
