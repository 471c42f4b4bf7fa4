package serve

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/snapshot"
)

// Page sizes of GET entries: the default, and the most one request reads.
const (
	defaultPage = 100
	maxPage     = 1000
)

// A page is {"records": [...], "next": CURSOR}: a state's records as
// dump writes them, and the cursor of the page after it ("" after the
// last).
//
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
	limit := defaultPage
	var from cursor
	pageParams := func(q url.Values) error {
		n, err := intParam(r, "limit", maxPage)
		if n > 0 {
			limit = n
		}
		if after := q.Get("after"); err == nil && after != "" {
			from, err = parseCursor(after)
		}
		return err
	}
	s.readState(w, r, func() int64 { return pageBytes(limit) }, pageParams, func(rd snapshot.Reader, q url.Values, at time.Time) error {
		op, ok := rd.Snapshot().Operator(q.Get("operator"))
		if ok && from.keyGroup >= op.MaxParallelism {
			return badRequestf("after: key group %d is past the operator's last, %d", from.keyGroup, op.MaxParallelism-1)
		}
		f := lookup.Filter{Operator: q.Get("operator"), State: q.Get("state"), Subtask: -1, Now: at}
		if ok {
			f.KeyGroups = &keygroup.Range{Start: from.keyGroup, End: op.MaxParallelism - 1}
		}
		page, err := readPage(r, rd, s.cfg.Registry.Codecs, f, from, limit)
		if err == nil {
			writeBody(w, http.StatusOK, page)
		}
		return err
	})
}

// maxPageBytes ends a page early where its records grow past it: big
// values make fewer records a page, not more memory.
const maxPageBytes = 4 << 20

// readPage encodes a Page of up to limit records from the cursor on, and
// the cursor of the record after them.
func readPage(r *http.Request, rd snapshot.Reader, codecs *snapshot.Codecs, f lookup.Filter, from cursor, limit int) ([]byte, error) {
	if err := snapshot.CheckReadable(rd.Snapshot()); err != nil {
		return nil, err
	}
	at := cursor{keyGroup: -1}
	var next string
	n := 0
	page := []byte(`{"records":[`)
	err := lookup.Dump(r.Context(), rd, codecs, f, func(rec *lookup.Record) error {
		if rec.KeyGroup != at.keyGroup {
			at = cursor{keyGroup: rec.KeyGroup}
		} else {
			at.n++
		}
		if at.keyGroup == from.keyGroup && at.n < from.n {
			return nil
		}
		if n == limit || len(page) >= maxPageBytes {
			next = at.String()
			return lookup.ErrStop
		}
		if n > 0 {
			page = append(page, ',')
		}
		page = lookup.AppendJSON(page, rec)
		page = page[:len(page)-1] // its newline
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	page = append(page, `],"next":`...)
	page = strconv.AppendQuote(page, next)
	return append(page, "}\n"...), nil
}
