package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/stateutil/stateutil/diff"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/snapshots", s.list)
	m.HandleFunc("GET /api/snapshots/{id}", s.snapshotView("summary", summaryBytes, func(ctx context.Context, src *source, rd snapshot.Reader, _ string) (any, error) {
		return report.Summarize(ctx, src.location, rd, false)
	}))
	m.HandleFunc("GET /api/snapshots/{id}/key-groups", s.snapshotView("key-groups", keyGroupsBytes, func(ctx context.Context, src *source, rd snapshot.Reader, op string) (any, error) {
		return report.KeyGroupDistribution(ctx, src.location, rd, op)
	}))
	m.HandleFunc("GET /api/snapshots/{id}/operator-state", s.snapshotView("operator-state", operatorStateBytes, func(ctx context.Context, src *source, rd snapshot.Reader, op string) (any, error) {
		return report.OperatorStateUsages(ctx, src.location, rd, s.cfg.Registry.Codecs, op, true)
	}))
	m.HandleFunc("GET /api/snapshots/{id}/get", s.get)
	m.HandleFunc("GET /api/snapshots/{id}/entries", s.entries)
	m.HandleFunc("GET /api/snapshots/{id}/plan", s.plan)
	m.HandleFunc("GET /api/diff", s.diff)
	s.sqlRoutes(m)
	m.HandleFunc("GET /{$}", s.index)
	m.HandleFunc("GET /assets/{name}", serveAsset)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such page: "+r.URL.Path)
	})
	s.mux = m
}

// SnapshotRef is one entry of GET /api/snapshots.
type SnapshotRef struct {
	ID       int    `json:"id"`
	Location string `json:"location"`
	Format   string `json:"format,omitempty"`
	Error    string `json:"error,omitempty"`
}

func (s *Server) list(w http.ResponseWriter, _ *http.Request) {
	refs := make([]SnapshotRef, len(s.snapshots))
	for i, src := range s.snapshots {
		refs[i] = SnapshotRef{ID: src.id, Location: src.location, Format: src.format}
		if src.err != nil {
			_, refs[i].Error = s.cfg.Classify(src.err)
		}
	}
	writeJSONStatus(w, http.StatusOK, refs)
}

// snapshot finds the snapshot a path's {id} names; only the indexes of
// the snapshots served are accepted.
func (s *Server) snapshot(param, v string) (*source, error) {
	id, err := strconv.Atoi(v)
	if err != nil || id < 0 || id >= len(s.snapshots) || strconv.Itoa(id) != v {
		return nil, badRequestf("%s must be a snapshot id from 0 to %d, not %q", param, len(s.snapshots)-1, v)
	}
	return s.snapshots[id], nil
}

// snapshotView serves a view of one snapshot, for the operator the
// optional operator parameter names ("": every one), computed once, on
// the memory estimate says it takes.
func (s *Server) snapshotView(name string, estimate func(*snapshot.Snapshot) int64,
	compute func(context.Context, *source, snapshot.Reader, string) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		src, err := s.snapshot("id", r.PathValue("id"))
		if err != nil {
			s.answer(w, nil, err)
			return
		}
		op := r.URL.Query().Get("operator")
		if name == "summary" && op != "" {
			s.answer(w, nil, badRequestf("operator goes with key-groups and operator-state"))
			return
		}
		if src.err != nil {
			s.answer(w, nil, src.err)
			return
		}
		s.cached(w, r, fmt.Sprintf("%s/%d/%s", name, src.id, op), estimate(src.meta), func(ctx context.Context) (any, error) {
			var out any
			err := src.with(ctx, func(rd snapshot.Reader) (err error) {
				out, err = compute(ctx, src, rd, op)
				return err
			})
			return out, err
		})
	}
}

// now reads the optional now parameter as get and dump read --now.
func now(r *http.Request) (time.Time, error) {
	t, err := lookup.ParseNow(r.URL.Query().Get("now"))
	if err != nil {
		return t, badRequestf("now %v", err)
	}
	return t, nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	key := func(q url.Values) error {
		if !q.Has("key") {
			return badRequestf("key is required")
		}
		return nil
	}
	s.readState(w, r, func() int64 { return recordBytes }, key, func(rd snapshot.Reader, q url.Values, at time.Time) error {
		rec, err := lookup.Get(r.Context(), rd, s.cfg.Registry.Codecs,
			lookup.Query{Operator: q.Get("operator"), State: q.Get("state"), Key: q.Get("key"), Namespace: q.Get("namespace"), Now: at})
		if err == nil {
			s.answer(w, rec, nil)
		}
		return err
	})
}

// readState serves a request that reads a state (get, entries): it checks
// the snapshot, the operator and state named, the parameters parse
// checks, and now; then read answers with a reader of the snapshot, while
// holding the bytes estimate gives (once parse has read the parameters)
// of the views' budget and a heavyAtOnce slot. The answer is written while
// both are held, so what is read stays bounded by them; the write timeout
// bounds how long a slow client holds them.
func (s *Server) readState(w http.ResponseWriter, r *http.Request, estimate func() int64, parse func(url.Values) error, read func(snapshot.Reader, url.Values, time.Time) error) {
	src, err := s.snapshot("id", r.PathValue("id"))
	q := r.URL.Query()
	for _, p := range []string{"operator", "state"} {
		if err == nil && q.Get(p) == "" {
			err = badRequestf("%s is required", p)
		}
	}
	if err == nil {
		err = parse(q)
	}
	var at time.Time
	if err == nil {
		at, err = now(r)
	}
	var held int64
	if err == nil {
		held, err = s.views.reserve(r.Context(), estimate())
	}
	if err == nil {
		defer s.views.release(held)
		err = s.withHeavy(r.Context(), func() error {
			return src.with(r.Context(), func(rd snapshot.Reader) error { return read(rd, q, at) })
		})
	}
	if err != nil {
		s.answer(w, nil, err)
	}
}

func (s *Server) plan(w http.ResponseWriter, r *http.Request) {
	src, err := s.snapshot("id", r.PathValue("id"))
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	p, err := intParam(r, "parallelism", keygroup.UpperBoundMaxParallelism)
	if err == nil && p == 0 {
		err = badRequestf("parallelism is required")
	}
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	maxP, err := intParam(r, "max-parallelism", keygroup.UpperBoundMaxParallelism)
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	if src.err != nil {
		s.answer(w, nil, src.err)
		return
	}
	s.cached(w, r, fmt.Sprintf("plan/%d/%d/%d", src.id, p, maxP), planBytes(src.meta, p), func(ctx context.Context) (any, error) {
		res, err := migrate.Run(ctx, s.cfg.Registry, migrate.Request{Source: src.location, PathMap: s.cfg.Open.PathMap, DryRun: true,
			Change: redistribute.Request{Parallelism: p, MaxParallelism: maxP}})
		if err != nil {
			return nil, err
		}
		return res.Plan.Plan, nil
	})
}

// diffMaxKeys bounds the keys a diff lists per operator, as diff's
// --max-keys does by default.
const diffMaxKeys = 1000

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a, err := s.snapshot("a", q.Get("a"))
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	b, err := s.snapshot("b", q.Get("b"))
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	for _, src := range []*source{a, b} {
		if src.err != nil {
			s.answer(w, nil, src.err)
			return
		}
	}
	s.cached(w, r, fmt.Sprintf("diff/%d/%d", a.id, b.id), diffBytes(a.meta, b.meta), func(ctx context.Context) (any, error) {
		// Readers of their own: two from the pools could wait on each
		// other when a and b are one snapshot.
		ra, err := s.cfg.Registry.Open(ctx, a.location, s.cfg.Open)
		if err != nil {
			return nil, err
		}
		defer ra.Close()
		rb, err := s.cfg.Registry.Open(ctx, b.location, s.cfg.Open)
		if err != nil {
			return nil, err
		}
		defer rb.Close()
		return diff.Compare(ctx, a.location, ra, b.location, rb,
			diff.Options{Entries: true, Values: true, MaxKeys: diffMaxKeys, Codecs: s.cfg.Registry.Codecs})
	})
}
