package s3_test

import (
	"testing"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/s3/s3test"
	"github.com/stateutil/stateutil/storage/storagetest"
)

func TestConformance(t *testing.T) {
	s3test.Location(t)
	storagetest.Run(t, func(t *testing.T) (storage.Storage, string) {
		return s3test.Resolve(t, s3test.Dir(t))
	})
}
