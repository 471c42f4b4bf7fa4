package jobs

import (
	"fmt"
	"strconv"

	"github.com/stateutil/stateutil/runtime"
)

const sensorsPerPart = 50

// reading is one generated sensor value. A sensor always lands in the same
// partition, so its readings keep their order.
type reading struct {
	Sensor string
	Zone   string
	Value  int64
}

// meanAcc is the accumulator of the mean.
type meanAcc struct {
	Sum   int64 `msgpack:"sum"`
	Count int64 `msgpack:"count"`
}

type mean struct{}

func (mean) Zero() meanAcc                  { return meanAcc{} }
func (mean) Add(a meanAcc, v int64) meanAcc { return meanAcc{Sum: a.Sum + v, Count: a.Count + 1} }
func (mean) Result(a meanAcc) float64       { return float64(a.Sum) / float64(max(a.Count, 1)) }

func larger(a, b int64) int64               { return max(a, b) }
func sum(a, b int64) int64                  { return a + b }
func sensorKey(r runtime.Record) string     { return r.Value.(reading).Sensor }
func zoneKey(r runtime.Record) string       { return r.Value.(reading).Zone }
func formatZone(r runtime.Record) string    { return fmt.Sprintf("%s %d", r.Key, r.Value.(int64)) }
func newSensorStats() runtime.KeyedFunction { return &sensorStats{} }
func newZoneTotals() runtime.KeyedFunction  { return &zoneTotals{} }

// sensorReading generates readings: sensor ids are chosen so that sensor
// id lands in partition id % n.
func sensorReading(seed uint64, n int) func(int, int64) runtime.Record {
	return func(p int, o int64) runtime.Record {
		x := rnd(seed, p, o, 3)
		id := (x%sensorsPerPart)*uint64(n) + uint64(p)
		return runtime.Record{Value: reading{
			Sensor: "sensor-" + strconv.FormatUint(id, 10),
			Zone:   "zone-" + strconv.FormatUint(id%7, 10),
			Value:  int64((x >> 24) % 1000),
		}}
	}
}

// Sensors keeps per sensor the maximum (ReducingState) and mean
// (AggregatingState) of its readings and passes each reading on, keyed by
// zone, to a stage that totals readings per zone (ReducingState) and
// counts them (ValueState), emitting "zone n" per reading.
func Sensors(c Config) (*runtime.Job, error) {
	if err := noFiles(c, "sensors"); err != nil {
		return nil, err
	}
	src := &runtime.GeneratorSource{NumPartitions: c.partitions(), Records: c.Records, Gen: sensorReading(c.Seed, c.partitions())}
	return &runtime.Job{
		Name:   "sensors",
		Source: runtime.SourceSpec{UID: "sensors-source", Name: "Source: readings", Source: src, Mode: c.mode()},
		Stages: []runtime.StageSpec{
			{UID: "sensor-stats", Name: "Keyed: max and mean per sensor", KeyBy: sensorKey, New: newSensorStats},
			{UID: "zone-totals", Name: "Keyed: totals per zone", KeyBy: zoneKey, New: newZoneTotals},
		},
		Sink: runtime.SinkSpec{UID: "zones-sink", Name: "Sink: zone counts", Format: formatZone},
	}, nil
}

type sensorStats struct {
	peak *runtime.ReducingState[int64]
	avg  *runtime.AggregatingState[int64, meanAcc, float64]
}

func (f *sensorStats) Open(ctx *runtime.Context) error {
	var err error
	if f.peak, err = runtime.GetReducingState(ctx, runtime.ReducingStateDescriptor[int64]{Name: "max", Serializer: runtime.Int64Serializer{}, Reduce: larger}); err != nil {
		return err
	}
	f.avg, err = runtime.GetAggregatingState(ctx, runtime.AggregatingStateDescriptor[int64, meanAcc, float64]{
		Name: "mean", Serializer: runtime.MsgpackSerializer[meanAcc]{}, Aggregator: mean{},
	})
	return err
}

func (f *sensorStats) Process(_ *runtime.Context, r runtime.Record, out runtime.Collector) error {
	v := r.Value.(reading).Value
	if err := f.peak.Add(v); err != nil {
		return err
	}
	if err := f.avg.Add(v); err != nil {
		return err
	}
	return out.Collect(runtime.Record{Value: r.Value})
}

type zoneTotals struct {
	total *runtime.ReducingState[int64]
	count *runtime.ValueState[int64]
}

func (f *zoneTotals) Open(ctx *runtime.Context) error {
	var err error
	if f.total, err = runtime.GetReducingState(ctx, runtime.ReducingStateDescriptor[int64]{Name: "total", Serializer: runtime.Int64Serializer{}, Reduce: sum}); err != nil {
		return err
	}
	f.count, err = runtime.GetValueState(ctx, runtime.ValueStateDescriptor[int64]{Name: "readings", Serializer: runtime.Int64Serializer{}})
	return err
}

func (f *zoneTotals) Process(_ *runtime.Context, r runtime.Record, out runtime.Collector) error {
	if err := f.total.Add(r.Value.(reading).Value); err != nil {
		return err
	}
	n, _, err := f.count.Value()
	if err != nil {
		return err
	}
	if err := f.count.Update(n + 1); err != nil {
		return err
	}
	return out.Collect(runtime.Record{Key: r.Key, Value: n + 1})
}
