package serve

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/snapshot"
)

// Page sizes of GET entries: the default, and the most one request reads.
const (
	defaultPage = 100
	maxPage     = 1000
)

// Page is one page of a state's records, as dump writes them, and the
// cursor of the page after it ("" after the last).
type Page struct {
	Records []json.RawMessage `json:"records"`
	Next    string            `json:"next"`
}

// cursor is where a page starts: the n-th record (from 0) of a key group.
// Dump yields records in key-group order, a key group's in an order of
// its stored keys, so a page reads from its key group on, never what
// came before.
type cursor struct{ keyGroup, n int }

func (c cursor) String() string { return strconv.Itoa(c.keyGroup) + "." + strconv.Itoa(c.n) }

func parseCursor(s string) (cursor, error) {
	kg, n, ok := strings.Cut(s, ".")
	c := cursor{}
	var err1, err2 error
	c.keyGroup, err1 = strconv.Atoi(kg)
	c.n, err2 = strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || c.keyGroup < 0 || c.keyGroup >= keygroup.UpperBoundMaxParallelism || c.n < 0 {
		return cursor{}, badRequestf("after must be a cursor a page returned as next, not %q", s)
	}
	return c, nil
}

func (s *Server) entries(w http.ResponseWriter, r *http.Request) {
	src, err := s.snapshot("id", r.PathValue("id"))
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	q := r.URL.Query()
	for _, p := range []string{"operator", "state"} {
		if q.Get(p) == "" {
			s.answer(w, nil, badRequestf("%s is required", p))
			return
		}
	}
	limit, err := intParam(r, "limit", maxPage)
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	if limit == 0 {
		limit = defaultPage
	}
	var from cursor
	if after := q.Get("after"); after != "" {
		if from, err = parseCursor(after); err != nil {
			s.answer(w, nil, err)
			return
		}
	}
	at, err := now(r)
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	page := &Page{Records: []json.RawMessage{}}
	err = s.withHeavy(r.Context(), func() error {
		return src.with(r.Context(), func(rd snapshot.Reader) error {
			op, ok := rd.Snapshot().Operator(q.Get("operator"))
			if ok && from.keyGroup >= op.MaxParallelism {
				return badRequestf("after: key group %d is past the operator's last, %d", from.keyGroup, op.MaxParallelism-1)
			}
			f := lookup.Filter{Operator: q.Get("operator"), State: q.Get("state"), Subtask: -1, Now: at}
			if ok {
				f.KeyGroups = &keygroup.Range{Start: from.keyGroup, End: op.MaxParallelism - 1}
			}
			return readPage(r, rd, s.cfg.Registry.Codecs, f, from, limit, page)
		})
	})
	s.answer(w, page, err)
}

// readPage fills page with up to limit records from the cursor on, and
// the cursor of the record after them.
func readPage(r *http.Request, rd snapshot.Reader, codecs *snapshot.Codecs, f lookup.Filter, from cursor, limit int, page *Page) error {
	if err := snapshot.CheckReadable(rd.Snapshot()); err != nil {
		return err
	}
	at := cursor{keyGroup: -1}
	var buf []byte
	return lookup.Dump(r.Context(), rd, codecs, f, func(rec *lookup.Record) error {
		if rec.KeyGroup != at.keyGroup {
			at = cursor{keyGroup: rec.KeyGroup}
		} else {
			at.n++
		}
		if at.keyGroup == from.keyGroup && at.n < from.n {
			return nil
		}
		if len(page.Records) == limit {
			page.Next = at.String()
			return lookup.ErrStop
		}
		buf = lookup.AppendJSON(buf[:0], rec)
		page.Records = append(page.Records, json.RawMessage(append([]byte(nil), buf[:len(buf)-1]...)))
		return nil
	})
}
