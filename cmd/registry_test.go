package cmd

// testReg is the registry the command tree builds.
var testReg = newRegistry()
