package cmd

import "github.com/stateutil/stateutil/storage/s3"

// testReg is the registry the command tree builds.
var testReg = newRegistry(&s3.Options{}, nil)
