package cmd

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot"
)

// procs is the raise of GOMAXPROCS that moreProcs shares among the
// commands running at once (tests run several in one process).
var procs struct {
	sync.Mutex
	users, saved int
}

// moreProcs raises GOMAXPROCS by up to four above the CPUs until restore
// is called, unless the GOMAXPROCS variable sets it. dump's workers spend
// much of their time in RocksDB's C code, during which the Go scheduler
// counts them as running: with a P per CPU, a sixth of the CPU time of a
// dump of the 1 GiB rocksdb snapshot on two cores went idle, with four Ps
// 6%. A read in Go alone only loses by the raise (see opensRocksDB).
func moreProcs() (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	procs.Lock()
	defer procs.Unlock()
	if procs.users == 0 {
		n := runtime.GOMAXPROCS(0)
		procs.saved = runtime.GOMAXPROCS(n + min(n, 4))
	}
	procs.users++
	return func() {
		procs.Lock()
		defer procs.Unlock()
		if procs.users--; procs.users == 0 {
			runtime.GOMAXPROCS(procs.saved)
		}
	}
}

// opensRocksDB reports whether reading s goes through RocksDB's C code:
// the rocksdb format, and Flink's RocksDB and ForSt snapshots but for their
// canonical savepoints. The other reads run in Go alone, where Ps beyond
// the CPUs only preempt each other: a dump of a Flink heap checkpoint took
// 15% longer with them.
func opensRocksDB(s *snapshot.Snapshot) bool {
	if s.Format == rocksdb.FormatName {
		return true
	}
	return s.Properties["savepoint_format"] != "canonical" &&
		slices.Contains(strings.Split(s.Properties["state_backend"], ","), "rocksdb")
}
