package jobs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/runtime"
)

// Vocabulary is the number of distinct generated words.
const Vocabulary = 1000

// WordCount counts words. Each source record is one word (generated) or
// one line split into words (file input). The counter keeps a ValueState
// per word and emits "word count" for every occurrence, so the committed
// output holds "w 1" .. "w n" exactly once for a word seen n times.
func WordCount(c Config) (*runtime.Job, error) {
	var src runtime.Source
	var flat func(runtime.Record, func(runtime.Record))
	if len(c.Input) > 0 {
		src = &runtime.FileSource{Paths: c.Input, Storage: c.Storage}
		flat = func(r runtime.Record, emit func(runtime.Record)) {
			for _, w := range strings.Fields(r.Value.(string)) {
				emit(runtime.Record{Value: strings.ToLower(w)})
			}
		}
	} else {
		if c.Records < 0 {
			return nil, fmt.Errorf("%w: records cannot be negative", runtime.ErrJob)
		}
		src = &runtime.GeneratorSource{NumPartitions: c.partitions(), Records: c.Records, Gen: func(p int, o int64) runtime.Record {
			// A skewed vocabulary: low word numbers are much more frequent.
			x := rnd(c.Seed, p, o, 1)
			n := (x % Vocabulary) * ((x >> 32) % Vocabulary) / Vocabulary
			return runtime.Record{Value: "w" + strconv.FormatUint(n, 10)}
		}}
	}
	return &runtime.Job{
		Name:   "wordcount",
		Source: runtime.SourceSpec{UID: "words-source", Name: "Source: words", Source: src, Mode: c.mode(), FlatMap: flat},
		Stages: []runtime.StageSpec{{
			UID: "word-counter", Name: "Keyed: count words",
			KeyBy: func(r runtime.Record) string { return r.Value.(string) },
			New:   func() runtime.KeyedFunction { return &counter{} },
		}},
		Sink: runtime.SinkSpec{UID: "counts-sink", Name: "Sink: counts", Format: func(r runtime.Record) string {
			return r.Key + " " + strconv.FormatInt(r.Value.(int64), 10)
		}},
	}, nil
}

type counter struct {
	count *runtime.ValueState[int64]
}

func (f *counter) Open(ctx *runtime.Context) error {
	var err error
	f.count, err = runtime.GetValueState(ctx, runtime.ValueStateDescriptor[int64]{Name: "count", Serializer: runtime.Int64Serializer{}})
	return err
}

func (f *counter) Process(_ *runtime.Context, r runtime.Record, out runtime.Collector) error {
	n, _, err := f.count.Value()
	if err != nil {
		return err
	}
	n++
	if err := f.count.Update(n); err != nil {
		return err
	}
	return out.Collect(runtime.Record{Key: r.Key, Value: n})
}
