// Package jobs holds the runtime's built-in jobs: wordcount (value state
// and source offsets), sessions (map, list and value state with TTL, two
// keyed stages) and sensors (reducing and aggregating state).
package jobs

import (
	"fmt"
	"sort"

	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Config sizes a built-in job's input.
type Config struct {
	// Records is the number of generated source records.
	Records int64
	// Partitions is the number of source partitions (default 4).
	Partitions int
	// Seed makes the generated input differ; the same seed gives the same input.
	Seed uint64
	// Input, when set, replaces the generator by a file source reading one
	// file per partition (wordcount only).
	Input []string
	// Union keeps the source offsets in union mode instead of split.
	Union bool
	// Storage resolves Input files given as URIs; nil reads local paths.
	Storage *storage.Registry
}

func (c Config) partitions() int {
	if c.Partitions > 0 {
		return c.Partitions
	}
	if len(c.Input) > 0 {
		return len(c.Input)
	}
	return 4
}

func (c Config) mode() snapshot.Mode {
	if c.Union {
		return snapshot.Union
	}
	return snapshot.Split
}

// Builder builds a job from a config.
type Builder struct {
	Summary string
	Build   func(Config) (*runtime.Job, error)
}

var builders = map[string]Builder{
	"wordcount": {Summary: "counts words (value state; source offsets in operator state)", Build: WordCount},
	"sessions":  {Summary: "per-user sessions and page counts (value, list and map state with TTL; two keyed stages)", Build: Sessions},
	"sensors":   {Summary: "per-sensor max and mean, per-zone totals (reducing and aggregating state)", Build: Sensors},
}

// Names lists the built-in jobs.
func Names() []string {
	names := make([]string, 0, len(builders))
	for n := range builders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup finds a built-in job.
func Lookup(name string) (Builder, error) {
	b, ok := builders[name]
	if !ok {
		return Builder{}, fmt.Errorf("%w: unknown job %q (known: %v)", runtime.ErrJob, name, Names())
	}
	return b, nil
}

// mix is splitmix64: the generators' deterministic randomness.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func rnd(seed uint64, p int, o int64, salt uint64) uint64 {
	return mix(seed ^ mix(uint64(p)<<48^uint64(o)) ^ salt)
}

func noFiles(c Config, job string) error {
	if len(c.Input) > 0 {
		return fmt.Errorf("%w: job %q reads generated input only", runtime.ErrJob, job)
	}
	if c.Records < 0 {
		return fmt.Errorf("%w: records cannot be negative", runtime.ErrJob)
	}
	return nil
}

// keyOf is the KeyBy of records whose Key was set by the source.
func keyOf(r runtime.Record) string { return r.Key }
