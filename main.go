// Command stateutil inspects, converts, rescales and verifies the state
// snapshots of stateful stream processing.
package main

import (
	"os"

	"github.com/stateutil/stateutil/cmd"
)

func main() { os.Exit(cmd.Main()) }
