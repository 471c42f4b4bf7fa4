package storage_test

import (
	"testing"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/storagetest"
)

func TestLocalConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Storage, string) {
		return storage.Local(), t.TempDir()
	})
}
