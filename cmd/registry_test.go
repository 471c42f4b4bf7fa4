package cmd

import "github.com/stateutil/stateutil/storage/s3"

// testReg is the registry the command tree builds.
var testReg = newRegistry(stores{s3: &s3.Options{}})
