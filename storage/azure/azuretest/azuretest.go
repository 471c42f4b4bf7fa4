// Package azuretest connects tests to the Azure Blob Storage emulator
// (scripts/azure-start.sh, Azurite on 127.0.0.1):
//
//	scripts/azure-start.sh && . .cache/azure.env
//
// exports STATEUTIL_TEST_AZURE (abfss://container@account.dfs.core.windows.net/prefix)
// and the emulator's account, key and endpoint
// (AZURE_STORAGE_CONNECTION_STRING). Without them Azure tests skip, except
// under CI=true or STATEUTIL_REQUIRE_AZURE=1, where they fail.
package azuretest

import (
	"os"
	"testing"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/azure"
	"github.com/stateutil/stateutil/storage/storagetest"
)

// Server is the emulator.
var Server = storagetest.Server{
	Kind:     "AZURE",
	Script:   "azure",
	Register: func(r *storage.Registry) { azure.Register(r, nil) },
	Isolate: func(t testing.TB) {
		if os.Getenv("AZURE_STORAGE_CONNECTION_STRING") == "" {
			t.Fatal("STATEUTIL_TEST_AZURE is set but AZURE_STORAGE_CONNECTION_STRING is not (. .cache/azure.env sets both)")
		}
		// Nothing of the machine's own Azure setup takes part.
		for _, v := range []string{"AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_SAS_TOKEN", "STATEUTIL_AZURE_ENDPOINT"} {
			t.Setenv(v, "")
		}
	},
}

// Dir makes a fresh directory on the emulator, removed when t ends, and
// returns it as an abfss:// URI.
func Dir(t testing.TB) string { return Server.Dir(t) }

// Resolve resolves an Azure URI, failing t on error.
func Resolve(t testing.TB, uri string) (storage.Storage, string) { return Server.Resolve(t, uri) }
