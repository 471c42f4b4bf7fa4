package surgery

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/stateutil/stateutil/snapshot"
)

// Record is one line of a load: one key of one keyed state, in the
// schema dump prints (lookup.Record), set whole or deleted. Key,
// Namespace and Value are JSON as dump prints them.
type Record struct {
	// Line is the record's line in the file it was read from.
	Line      int                `json:"line"`
	Operator  string             `json:"operator"`
	State     string             `json:"state"`
	Kind      snapshot.StateKind `json:"kind,omitempty"`
	Key       json.RawMessage    `json:"key"`
	Namespace json.RawMessage    `json:"namespace,omitempty"`
	// KeyGroup and Subtask, when given, must be where the key is in the
	// source: a record moved to another key can only be told this way.
	KeyGroup *int            `json:"key_group,omitempty"`
	Subtask  *int            `json:"subtask,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
	Delete   bool            `json:"delete,omitempty"`
}

// line is a record as written: dump's fields, each checked for its JSON
// type; ttl is what dump shows and load does not take.
type line struct {
	SchemaVersion *int               `json:"schema_version"`
	Operator      *string            `json:"operator"`
	State         *string            `json:"state"`
	Kind          snapshot.StateKind `json:"kind"`
	Key           json.RawMessage    `json:"key"`
	Namespace     json.RawMessage    `json:"namespace"`
	KeyGroup      *int               `json:"key_group"`
	Subtask       *int               `json:"subtask"`
	Value         json.RawMessage    `json:"value"`
	TTL           json.RawMessage    `json:"ttl"`
	Delete        bool               `json:"delete"`
}

// ReadRecords reads records, one JSON object a line (blank lines aside),
// and checks what can be checked without the snapshot: that each line is
// one JSON object with dump's fields of their types, an operator, a
// state, a key, and a value unless it deletes, and a schema_version, if
// any, of schema (dump's, lookup.SchemaVersion, which surgery sits below).
// A line that is not is refused (ErrBadEdit), naming its number.
func ReadRecords(r io.Reader, schema int) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Record
	for n := 1; ; n++ {
		text, err := readLine(br)
		if errors.Is(err, errLongLine) {
			return nil, fmt.Errorf("line %d: %w", n, badEditf("%v", err))
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if t := bytes.TrimSpace(text); len(t) > 0 {
			rec, perr := parseRecord(t, schema)
			if perr != nil {
				return nil, fmt.Errorf("line %d: %w", n, perr)
			}
			rec.Line = n
			out = append(out, rec)
		}
		if err != nil {
			return out, nil
		}
	}
}

// maxRecordLine bounds one record's line: a value of a few MiB is large
// state already, and a file without line breaks must not be read whole.
const maxRecordLine = 64 << 20

var errLongLine = fmt.Errorf("longer than %d MiB", maxRecordLine>>20)

// readLine reads up to and including the next line break, or to the end.
func readLine(br *bufio.Reader) ([]byte, error) {
	var text []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(text)+len(chunk) > maxRecordLine {
			return nil, errLongLine
		}
		text = append(text, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return text, err
		}
	}
}

func parseRecord(text []byte, schema int) (Record, error) {
	if err := checkStrictJSON(text); err != nil {
		return Record{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	var l line
	if err := dec.Decode(&l); err != nil {
		return Record{}, badEditf("not a record in dump's schema: %v", err)
	}
	if dec.More() {
		return Record{}, badEditf("more than one JSON value on the line")
	}
	present := func(raw json.RawMessage) bool { return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) }
	switch {
	case l.SchemaVersion != nil && *l.SchemaVersion != schema:
		return Record{}, badEditf("schema_version %d; load reads dump's version %d", *l.SchemaVersion, schema)
	case l.Operator == nil || *l.Operator == "":
		return Record{}, badEditf("no operator")
	case l.State == nil || *l.State == "":
		return Record{}, badEditf("no state")
	case !present(l.Key):
		return Record{}, badEditf("no key")
	case !l.Delete && l.Value == nil:
		return Record{}, badEditf("no value (and not \"delete\": true)")
	case l.Delete && l.Value != nil:
		return Record{}, badEditf("\"delete\": true and a value: a record sets its key or deletes it, not both")
	case l.KeyGroup != nil && *l.KeyGroup < 0, l.Subtask != nil && *l.Subtask < 0:
		return Record{}, badEditf("a negative key_group or subtask")
	}
	rec := Record{Operator: *l.Operator, State: *l.State, Kind: l.Kind, Key: l.Key, KeyGroup: l.KeyGroup, Subtask: l.Subtask, Delete: l.Delete}
	if present(l.Namespace) {
		rec.Namespace = l.Namespace
	}
	rec.Value = l.Value
	return rec, nil
}

// addLoad checks the records of a load against the snapshot and makes
// each a put of its key's whole value (or its deletion) into the
// operator it names. Records of timer states are checked and skipped.
func (w *Reader) addLoad(codecs *snapshot.Codecs, e Edit, opEditOf func(*snapshot.Operator) *opEdit) error {
	src := w.Reader.Snapshot()
	lr := &LoadReport{From: e.From, Records: len(e.Records)}
	for _, rec := range e.Records {
		op, ok := src.Operator(rec.Operator)
		if !ok {
			return fmt.Errorf("%w: %s: line %d: no operator %q in the snapshot (operators: %s)", snapshot.ErrNotFound, e, rec.Line, rec.Operator, labels(src))
		}
		skipped, err := opEditOf(op).addRecord(codecs, rec, e.Now)
		if err != nil {
			return fmt.Errorf("%s: line %d: %w", e, rec.Line, err)
		}
		switch {
		case skipped:
			lr.TimersSkipped++
		case rec.Delete:
			lr.Deletes++
		default:
			lr.Puts++
		}
	}
	w.loads = append(w.loads, lr)
	return nil
}

// addRecord makes one record a put; skipped is true for a record of
// timers, which load does not set.
func (oe *opEdit) addRecord(codecs *snapshot.Codecs, rec Record, now int64) (skipped bool, err error) {
	pe := Edit{Op: Put, Operator: rec.Operator, State: rec.State, Keys: []string{string(rec.Key)},
		Namespace: string(rec.Namespace), Value: string(rec.Value), Delete: rec.Delete, Now: now}
	se, ks, err := oe.keyedState(pe)
	if err != nil {
		return false, err
	}
	if rec.Kind != "" && rec.Kind != ks.Kind {
		return false, badEditf("kind %s given for state %q, a %s state", rec.Kind, ks.Name, ks.Kind)
	}
	var kg int
	if ks.Kind == snapshot.Timer {
		if _, kg, err = oe.keyIn(codecs, ks, pe.Keys[0]); err != nil {
			return false, err
		}
		skipped = true
	} else {
		p, err := oe.addPutTo(codecs, se, ks, pe, rec.Line)
		if err != nil {
			return false, err
		}
		// Only expiries tell entries written as they were from the
		// source's: states without TTL need nothing held.
		p.keepUnchanged = ks.TTL != nil
		se.loaded = true
		kg = p.kg
	}
	if rec.KeyGroup != nil && *rec.KeyGroup != kg {
		return false, badEditf("key_group %d given, but key %s is in key group %d (max parallelism %d)", *rec.KeyGroup, pe.Keys[0], kg, oe.orig.MaxParallelism)
	}
	if rec.Subtask != nil {
		if sub := subtaskOf(oe.orig, kg); sub == nil || sub.Index != *rec.Subtask {
			return false, badEditf("subtask %d given, but key %s (key group %d) is in subtask %s", *rec.Subtask, pe.Keys[0], kg, subtaskText(sub))
		}
	}
	return skipped, nil
}

func subtaskOf(op *snapshot.Operator, kg int) *snapshot.Subtask {
	for _, sub := range op.Subtasks {
		if sub != nil && sub.KeyGroups.Contains(kg) {
			return sub
		}
	}
	return nil
}

func subtaskText(sub *snapshot.Subtask) string {
	if sub == nil {
		return "none"
	}
	return fmt.Sprint(sub.Index)
}
