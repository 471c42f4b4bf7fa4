package cmd

import (
	"os"
	"runtime"
	"sync"
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
// 6%.
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
