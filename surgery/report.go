package surgery

import (
	"fmt"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
)

// Report is what the edits did to the state read: per state an edit
// touches, its entries (elements) and bytes before and after, and per
// deletion the keys no state held.
type Report struct {
	States    []StateReport    `json:"states"`
	Deletions []DeletionReport `json:"deletions"`
	Loads     []LoadReport     `json:"loads"`
}

// StateReport is one state an edit touches.
type StateReport struct {
	Operator string `json:"operator"`
	// Scope is snapshot.ScopeKeyed or snapshot.ScopeOperator.
	Scope string `json:"scope"`
	State string `json:"state"`
	// Edit is "dropped", "renamed", "keys deleted", "put" or "loaded".
	Edit string `json:"edit"`
	// To is the new name of a renamed state.
	To string `json:"to,omitempty"`
	// KeysPut is how many keys were given a value (put, loaded);
	// KeysDeleted how many of the keys to delete the state held.
	KeysPut     int    `json:"keys_put"`
	KeysDeleted int    `json:"keys_deleted"`
	Before      Counts `json:"before"`
	After       Counts `json:"after"`
}

// DeletionReport is one operator's deletion of keys.
type DeletionReport struct {
	Operator string `json:"operator"`
	// Keys is the number of distinct keys given, Deleted those some
	// state held, Missing those none did; FirstMissing the first of them
	// in the order given.
	Keys         int      `json:"keys"`
	Deleted      int      `json:"deleted"`
	Missing      int      `json:"missing"`
	FirstMissing []string `json:"first_missing"`
}

// LoadReport is one load of records.
type LoadReport struct {
	From    string `json:"from"`
	Records int    `json:"records"`
	// Puts and Deletes count the records that set and delete a key;
	// TimersSkipped those of timer states, which load does not set.
	Puts          int `json:"puts"`
	Deletes       int `json:"deletes"`
	TimersSkipped int `json:"timers_skipped"`
}

// maxListedMissing is how many missing keys a report names.
const maxListedMissing = 10

// Report is what the edits did to what was read so far: after a copy (or
// Scan), to the whole of the edited operators.
func (w *Reader) Report() *Report {
	rep := &Report{States: []StateReport{}, Deletions: []DeletionReport{}, Loads: []LoadReport{}}
	for _, oe := range w.order {
		oe.mu.Lock()
		keyed := make([]Counts, 2*len(oe.keyed))
		for _, counts := range oe.kgCounts {
			for i := range counts {
				keyed[i].add(counts[i])
			}
		}
		oper := make([]Counts, 2*len(oe.oper))
		for _, counts := range oe.elemCounts {
			for i := range counts {
				oper[i].add(counts[i])
			}
		}
		oe.mu.Unlock()
		label := oe.orig.Label()
		for _, group := range []struct {
			states []*stateEdit
			counts []Counts
		}{{oe.keyed, keyed}, {oe.oper, oper}} {
			for _, se := range group.states {
				sr := StateReport{Operator: label, Scope: se.scope, State: se.source,
					Before: group.counts[2*se.index], After: group.counts[2*se.index+1]}
				switch {
				case se.dropped:
					sr.Edit = "dropped"
				case se.keys != nil:
					sr.Edit = "keys deleted"
					for i := range se.found {
						if se.found[i].Load() {
							sr.KeysDeleted++
						}
					}
				case se.puts > 0:
					sr.Edit = "put"
					if se.loaded {
						sr.Edit = "loaded"
					}
					sr.KeysPut, sr.KeysDeleted = se.putCounts()
				case se.renamed:
					sr.Edit = "renamed"
				default:
					continue
				}
				if se.renamed {
					sr.To = se.name
				}
				rep.States = append(rep.States, sr)
			}
		}
		if oe.del != nil {
			rep.Deletions = append(rep.Deletions, oe.deletionReport())
		}
	}
	for _, l := range w.loads {
		rep.Loads = append(rep.Loads, *l)
	}
	return rep
}

// putCounts is how many keys the puts into se set, and how many of those
// they delete the source held (a map entry's deletion deletes no key).
func (se *stateEdit) putCounts() (set, deleted int) {
	for _, ps := range se.putsByKey {
		for _, p := range ps {
			switch {
			case !p.delete:
				set++
			case !p.entry && p.found.Load():
				deleted++
			}
		}
	}
	return set, deleted
}

func (oe *opEdit) deletionReport() DeletionReport {
	dr := DeletionReport{Operator: oe.orig.Label(), Keys: len(oe.del.keys), FirstMissing: []string{}}
	for i, text := range oe.del.keys {
		if oe.foundAnywhere(i) {
			dr.Deleted++
			continue
		}
		dr.Missing++
		if len(dr.FirstMissing) < maxListedMissing {
			dr.FirstMissing = append(dr.FirstMissing, text)
		}
	}
	return dr
}

func (oe *opEdit) foundAnywhere(key int) bool {
	for _, se := range oe.keyed {
		if se.keys != nil && se.found[key].Load() {
			return true
		}
	}
	return false
}

// Check refuses, once the edited operators were read whole, a deletion
// that requires its keys present and found some in no state
// (snapshot.ErrNotFound).
func (w *Reader) Check() error {
	for _, oe := range w.order {
		if oe.del == nil || !oe.del.edit.RequirePresent {
			continue
		}
		if d := oe.deletionReport(); d.Missing > 0 {
			return fmt.Errorf("%w: %d of the %d keys to delete are in no keyed state of operator %q: %s%s",
				snapshot.ErrNotFound, d.Missing, d.Keys, d.Operator, strings.Join(d.FirstMissing, ", "), more(d.Missing, len(d.FirstMissing)))
		}
	}
	return nil
}

func more(n, listed int) string {
	if n > listed {
		return fmt.Sprintf(" and %d more", n-listed)
	}
	return ""
}
