package jobs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/snapshot"
)

// Session gap and sizes of the generated clickstream.
const (
	SessionGap     = 30 * time.Second
	usersPerPart   = 25
	pagesGenerated = 12
)

// click is one generated page view. Time is event time (ms), one second
// per record of a partition; a user always lands in the same partition,
// so each user's clicks keep their order.
type click struct {
	User string
	Page string
	Time int64
}

// session is the open session of a user.
type session struct {
	Start  int64 `msgpack:"start"`
	Last   int64 `msgpack:"last"`
	Clicks int64 `msgpack:"clicks"`
}

// Sessions groups each user's clicks into sessions split by SessionGap of
// event time. Stage one keeps per user the open session (ValueState, TTL
// refreshed on read and write), its pages (ListState, TTL) and lifetime
// page counts (MapState, TTL, expired entries visible until cleaned up);
// it emits every closed session. Stage two, keyed by the session's first
// page, counts sessions per landing page and emits "page n".
func Sessions(c Config) (*runtime.Job, error) {
	if err := noFiles(c, "sessions"); err != nil {
		return nil, err
	}
	n := c.partitions()
	src := &runtime.GeneratorSource{NumPartitions: n, Records: c.Records, Gen: func(p int, o int64) runtime.Record {
		x := rnd(c.Seed, p, o, 2)
		user := "user-" + strconv.FormatUint((x%usersPerPart)*uint64(n)+uint64(p), 10)
		page := "/page/" + strconv.FormatUint((x>>20)%pagesGenerated, 10)
		return runtime.Record{Key: user, Value: click{User: user, Page: page, Time: o * 1000}}
	}}
	return &runtime.Job{
		Name:   "sessions",
		Source: runtime.SourceSpec{UID: "clicks-source", Name: "Source: clicks", Source: src, Mode: c.mode()},
		Stages: []runtime.StageSpec{
			{UID: "sessionizer", Name: "Keyed: sessions per user", KeyBy: keyOf, New: func() runtime.KeyedFunction { return &sessionizer{} }},
			{UID: "landing-pages", Name: "Keyed: sessions per landing page", KeyBy: func(r runtime.Record) string { return r.Value.(closed).Landing },
				New: func() runtime.KeyedFunction { return &landingCounter{} }},
		},
		Sink: runtime.SinkSpec{UID: "sessions-sink", Name: "Sink: landing pages", Format: func(r runtime.Record) string {
			return fmt.Sprintf("%s %d", r.Key, r.Value.(int64))
		}},
	}, nil
}

// closed is a finished session on its way to stage two.
type closed struct {
	User    string
	Landing string
	Pages   string
}

type sessionizer struct {
	open   *runtime.ValueState[session]
	pages  *runtime.ListState[string]
	counts *runtime.MapState[string, int64]
}

func (f *sessionizer) Open(ctx *runtime.Context) error {
	var err error
	if f.open, err = runtime.GetValueState(ctx, runtime.ValueStateDescriptor[session]{
		Name: "open-session", Serializer: runtime.MsgpackSerializer[session]{},
		TTL: &runtime.TTLConfig{TTL: time.Hour, Update: snapshot.OnReadAndWrite},
	}); err != nil {
		return err
	}
	if f.pages, err = runtime.GetListState(ctx, runtime.ListStateDescriptor[string]{
		Name: "session-pages", Serializer: runtime.StringSerializer{},
		TTL: &runtime.TTLConfig{TTL: time.Hour},
	}); err != nil {
		return err
	}
	f.counts, err = runtime.GetMapState(ctx, runtime.MapStateDescriptor[string, int64]{
		Name: "page-counts", KeySerializer: runtime.StringSerializer{}, ValueSerializer: runtime.Int64Serializer{},
		TTL: &runtime.TTLConfig{TTL: 24 * time.Hour, Update: snapshot.OnReadAndWrite, Visibility: snapshot.ReturnExpiredIfNotCleanedUp},
	})
	return err
}

func (f *sessionizer) Process(_ *runtime.Context, r runtime.Record, out runtime.Collector) error {
	c := r.Value.(click)
	s, ok, err := f.open.Value()
	if err != nil {
		return err
	}
	if ok && c.Time-s.Last > SessionGap.Milliseconds() {
		pages, err := f.pages.Get()
		if err != nil {
			return err
		}
		if err := out.Collect(runtime.Record{Value: closed{User: c.User, Landing: pages[0], Pages: strings.Join(pages, ",")}}); err != nil {
			return err
		}
		if err := f.pages.Clear(); err != nil {
			return err
		}
		ok = false
	}
	if !ok {
		s = session{Start: c.Time}
	}
	s.Last, s.Clicks = c.Time, s.Clicks+1
	if err := f.open.Update(s); err != nil {
		return err
	}
	if err := f.pages.Add(c.Page); err != nil {
		return err
	}
	n, _, err := f.counts.Get(c.Page)
	if err != nil {
		return err
	}
	return f.counts.Put(c.Page, n+1)
}

type landingCounter struct {
	sessions *runtime.ValueState[int64]
	pages    *runtime.ReducingState[int64]
}

func (f *landingCounter) Open(ctx *runtime.Context) error {
	var err error
	if f.sessions, err = runtime.GetValueState(ctx, runtime.ValueStateDescriptor[int64]{Name: "sessions", Serializer: runtime.Int64Serializer{}}); err != nil {
		return err
	}
	f.pages, err = runtime.GetReducingState(ctx, runtime.ReducingStateDescriptor[int64]{
		Name: "pages-viewed", Serializer: runtime.Int64Serializer{}, Reduce: func(a, b int64) int64 { return a + b },
	})
	return err
}

func (f *landingCounter) Process(_ *runtime.Context, r runtime.Record, out runtime.Collector) error {
	s := r.Value.(closed)
	n, _, err := f.sessions.Value()
	if err != nil {
		return err
	}
	n++
	if err := f.sessions.Update(n); err != nil {
		return err
	}
	if err := f.pages.Add(int64(strings.Count(s.Pages, ",") + 1)); err != nil {
		return err
	}
	return out.Collect(runtime.Record{Key: r.Key, Value: n})
}
