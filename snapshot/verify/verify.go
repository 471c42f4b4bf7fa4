// Package verify checks a snapshot end to end: its key-group layout, every
// keyed entry (range, order, hash, TTL), every operator-state element, and
// the figures its metadata records, collecting every finding rather than
// stopping at the first. Formats' own checks (checksums, references)
// surface as read errors while every entry and element is read.
package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// SchemaVersion is the version of the Result JSON document.
const SchemaVersion = 1

// Checks a Finding can report.
const (
	CheckLayout  = "layout" // parallelism, subtask indexes, duplicate operators
	CheckRanges  = "key-group-ranges"
	CheckRange   = "entry-key-group" // an entry outside its subtask's range
	CheckOrder   = "entry-order"
	CheckHash    = "key-hash"
	CheckTTL     = "ttl"
	CheckState   = "undeclared-state"
	CheckFigures = "metadata-figures"
	CheckRead    = "read"
	CheckFormat  = "format"     // the format the metadata names is not the one it was read as
	CheckKind    = "state-kind" // a keyed state of a kind no format knows
	CheckFiles   = "files"      // Subtask.Files is not what the reader reads
	CheckDecode  = "decode"     // bytes that do not decode as the type the snapshot records
	// CheckUnreadable is state the format reader found but cannot read.
	CheckUnreadable = "unreadable"
	// CheckUnchecked is a warning: a part of the snapshot that its format
	// would let verify check, and cannot (snapshot.Warner).
	CheckUnchecked = "unchecked"
)

// ErrWarnings reports warnings, which fail verify only when asked
// (verify --strict).
var ErrWarnings = errors.New("warnings")

// Finding is one problem.
type Finding struct {
	Check    string `json:"check"`
	Operator string `json:"operator,omitempty"`
	Subtask  *int   `json:"subtask,omitempty"`
	KeyGroup *int   `json:"key_group,omitempty"`
	Message  string `json:"message"`
}

func (f Finding) String() string {
	where := ""
	if f.Operator != "" {
		where = fmt.Sprintf("operator %q", f.Operator)
	}
	if f.Subtask != nil {
		where += fmt.Sprintf(" subtask %d", *f.Subtask)
	}
	if f.KeyGroup != nil {
		where += fmt.Sprintf(" key group %d", *f.KeyGroup)
	}
	if where == "" {
		return f.Check + ": " + f.Message
	}
	return f.Check + ": " + where + ": " + f.Message
}

// Result is what a check found. OK means no findings: values that were
// not decoded are no damage, and are counted apart, and so are warnings,
// which say what could not be checked.
type Result struct {
	SchemaVersion int          `json:"schema_version"`
	Location      string       `json:"location"`
	Format        string       `json:"format"`
	OK            bool         `json:"ok"`
	Checked       Checked      `json:"checked"`
	Findings      []Finding    `json:"findings"`
	Warnings      []Finding    `json:"warnings"`
	NotDecoded    []NotDecoded `json:"not_decoded"`
	// KeysNotRecorded names the operators (as NotDecoded does) whose keys
	// were not decoded because the snapshot records no key serializer of
	// theirs (snapshot.UnrecordedKeys): another snapshot of the job can
	// give them (snapshot.Schemas.KeySerializersFrom).
	KeysNotRecorded []string `json:"keys_not_recorded,omitempty"`
}

// NotDecoded counts the values of one part of one state that were not
// decoded because stateutil does not implement the serializer that wrote
// them (or a part of them).
type NotDecoded struct {
	Operator string `json:"operator"`
	State    string `json:"state"`
	// Part is "key", "namespace", "map key", "value" (keyed state),
	// "element" (operator state), or PartState: the state of a subtask
	// could not be read at all, its values not told apart, and Count is
	// how many values the snapshot records it holds.
	Part       string `json:"part"`
	Serializer string `json:"serializer"`
	// ValueClass is the class the serializer writes, where the snapshot
	// records it (Kryo, POJO).
	ValueClass string `json:"value_class,omitempty"`
	Count      int64  `json:"count"`
	// Uncounted is set where Count leaves out the values of a state whose
	// count the snapshot does not record (PartState).
	Uncounted bool `json:"uncounted,omitempty"`
}

// PartState is the Part of a state that could not be read at all.
const PartState = "state"

// Values is Count as printed: "?" where it is not known, ">=N" where it
// is known in part.
func (d NotDecoded) Values() string {
	switch {
	case d.Uncounted && d.Count == 0:
		return "?"
	case d.Uncounted:
		return ">=" + strconv.FormatInt(d.Count, 10)
	}
	return strconv.FormatInt(d.Count, 10)
}

// NotDecodedValues is the number of values that were not decoded.
func (r *Result) NotDecodedValues() int64 {
	var n int64
	for _, d := range r.NotDecoded {
		n += d.Count
	}
	return n
}

// Checked counts what was read.
type Checked struct {
	Operators int   `json:"operators"`
	Subtasks  int   `json:"subtasks"`
	Entries   int64 `json:"entries"`
	Elements  int64 `json:"elements"`
}

// Check reads the whole snapshot and reports every finding. The error is
// only for a cancelled context; damage is reported as findings.
func Check(ctx context.Context, location string, r snapshot.Reader, codecs *snapshot.Codecs) (*Result, error) {
	res := &Result{SchemaVersion: SchemaVersion, Location: location, Format: r.Snapshot().Format, Findings: []Finding{}, Warnings: []Finding{}, NotDecoded: []NotDecoded{}}
	if w, ok := r.(snapshot.Warner); ok {
		for _, msg := range w.Warnings() {
			res.Warnings = append(res.Warnings, Finding{Check: CheckUnchecked, Message: msg})
		}
	}
	if u, ok := r.(snapshot.UnrecordedKeys); ok {
		for _, id := range u.KeysNotRecorded() {
			label := id
			if i := slices.IndexFunc(r.Snapshot().Operators, func(op *snapshot.Operator) bool { return op.ID == id }); i >= 0 {
				label = r.Snapshot().Operators[i].Label()
			}
			res.KeysNotRecorded = append(res.KeysNotRecorded, label)
		}
	}
	notDecoded := map[NotDecoded]int{} // index in res.NotDecoded, by everything but the count
	if fr, ok := r.(snapshot.FormatRecorder); ok {
		if rec := fr.RecordedFormat(); rec != "" && rec != res.Format {
			res.add(Finding{Check: CheckFormat, Message: fmt.Sprintf("the metadata names format %q, but the snapshot was read as %q", rec, res.Format)})
		}
	}
	if wc, ok := r.(snapshot.WholeChecker); ok {
		err := wc.CheckWhole(ctx)
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, err := range errs {
			if err != nil {
				res.add(Finding{Check: CheckRead, Message: err.Error()})
			}
		}
	}
	// The format's own reader says which files it follows; once unreadable
	// state is set aside, operators are copies it does not know.
	ff, _ := r.(snapshot.FileFollower)
	r, unreadable := snapshot.WithoutUnreadable(r)
	if len(unreadable) > 0 {
		ff = nil
	}
	for _, u := range unreadable {
		if u.Serializer != "" && !u.Damaged {
			// No damage: values no serializer of stateutil's tells apart.
			res.countNotDecoded(notDecoded, NotDecoded{Operator: u.Operator, State: u.State, Part: PartState, Serializer: u.Serializer, ValueClass: u.ValueClass}, u.Values)
			continue
		}
		i := u.Subtask
		res.add(Finding{Check: CheckUnreadable, Operator: u.Operator, Subtask: &i, Message: u.Unreadable.String()})
	}
	s := r.Snapshot()
	seen := map[string]bool{}
	for _, op := range s.Operators {
		key := op.ID + "\x00" + op.UID
		if seen[key] {
			res.add(Finding{Check: CheckLayout, Operator: op.Label(), Message: "operator appears twice"})
		}
		seen[key] = true
		res.Checked.Operators++
		c := &opChecker{res: res, r: r, op: op, codecs: codecs, follower: ff, notDecoded: notDecoded}
		c.layout()
		c.kinds()
		for _, sub := range op.Subtasks {
			if sub == nil {
				continue
			}
			res.Checked.Subtasks++
			c.files(sub)
			c.entries(ctx, sub)
			c.elements(ctx, sub)
			c.raw(ctx, sub)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	res.OK = len(res.Findings) == 0
	return res, nil
}

func (r *Result) add(f Finding) { r.Findings = append(r.Findings, f) }

// countNotDecoded adds n values to the row of k (its Count unset), made
// where there is none; index holds the rows by everything but the count.
// n is 0 for a state whose values are not counted.
func (r *Result) countNotDecoded(index map[NotDecoded]int, k NotDecoded, n int64) {
	i, ok := index[k]
	if !ok {
		i = len(r.NotDecoded)
		index[k] = i
		r.NotDecoded = append(r.NotDecoded, k)
	}
	r.NotDecoded[i].Count += n
	r.NotDecoded[i].Uncounted = r.NotDecoded[i].Uncounted || n == 0
}

type opChecker struct {
	res      *Result
	r        snapshot.Reader
	op       *snapshot.Operator
	codecs   *snapshot.Codecs
	follower snapshot.FileFollower // nil: the files are not compared
	// notDecoded indexes res.NotDecoded.
	notDecoded map[NotDecoded]int
}

// decoded reports whether err leaves a value decoded or damaged, counting a
// value that was not decoded against its state, part and serializer.
func (c *opChecker) decoded(state, part string, err error) bool {
	nd := (*snapshot.NotDecodedError)(nil)
	if !errors.As(err, &nd) {
		return err == nil
	}
	c.res.countNotDecoded(c.notDecoded, NotDecoded{Operator: c.op.Label(), State: state, Part: part, Serializer: nd.Serializer, ValueClass: nd.ValueClass}, 1)
	return true
}

func (c *opChecker) add(check string, sub *snapshot.Subtask, kg *int, format string, args ...any) {
	f := Finding{Check: check, Operator: c.op.Label(), KeyGroup: kg, Message: fmt.Sprintf(format, args...)}
	if sub != nil {
		i := sub.Index
		f.Subtask = &i
	}
	c.res.add(f)
}

// layout checks parallelism and that the ranges partition [0, maxP)
// exactly, as Flink assigns them.
func (c *opChecker) layout() {
	op := c.op
	if err := keygroup.Check(op.Parallelism, op.MaxParallelism); err != nil {
		c.add(CheckLayout, nil, nil, "%v", err)
		return
	}
	if len(op.Subtasks) != op.Parallelism {
		c.add(CheckLayout, nil, nil, "parallelism %d but %d subtasks", op.Parallelism, len(op.Subtasks))
	}
	next := 0
	for i, sub := range op.Subtasks {
		if sub == nil {
			c.add(CheckLayout, nil, nil, "subtask %d is missing", i)
			continue
		}
		if sub.Index != i {
			c.add(CheckLayout, sub, nil, "stored at position %d", i)
		}
		kgs := sub.KeyGroups
		switch {
		case kgs.Start != next:
			c.add(CheckRanges, sub, nil, "range %v should start at %d: ranges must partition [0,%d) without gaps or overlaps", kgs, next, op.MaxParallelism)
		case kgs.Len() == 0:
			c.add(CheckRanges, sub, nil, "empty key-group range %v", kgs)
		case kgs != keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i):
			c.add(CheckRanges, sub, nil, "range %v, but Flink assigns %v to subtask %d of %d", kgs, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i), i, op.Parallelism)
		}
		next = max(next, kgs.End+1)
	}
	if next != op.MaxParallelism && len(op.Subtasks) > 0 {
		c.add(CheckRanges, nil, nil, "ranges end at key group %d, want %d", next-1, op.MaxParallelism-1)
	}
}

// kinds reports keyed states of a kind no format knows: readers refuse
// them, but Check is given any Reader.
func (c *opChecker) kinds() {
	for _, st := range c.op.KeyedStates {
		if !st.Kind.Known() {
			c.add(CheckKind, nil, nil, "keyed state %q has unknown kind %q", st.Name, st.Kind)
		}
	}
}

// files compares the files the metadata lists for a subtask with those
// the reader follows to read it, where the format records both.
func (c *opChecker) files(sub *snapshot.Subtask) {
	if c.follower == nil {
		return
	}
	followed, err := c.follower.FollowedFiles(c.op, sub.Index)
	if err != nil {
		c.add(CheckRead, sub, nil, "listing the subtask's files: %v", err)
		return
	}
	listed := map[string]snapshot.FileRef{}
	for _, f := range sub.Files {
		if _, dup := listed[f.Path]; dup {
			c.add(CheckFiles, sub, nil, "file %q is listed twice", f.Path)
		}
		listed[f.Path] = f
	}
	for _, f := range followed {
		l, ok := listed[f.Path]
		switch {
		case !ok:
			c.add(CheckFiles, sub, nil, "state is read from %q, which the subtask's file list lacks", f.Path)
		case l != f:
			c.add(CheckFiles, sub, nil, "file %q is listed as %s, but read as %s", f.Path, fileText(l), fileText(f))
		}
		delete(listed, f.Path)
	}
	for _, f := range sub.Files {
		if _, ok := listed[f.Path]; ok {
			c.add(CheckFiles, sub, nil, "file %q is listed, but no state is read from it", f.Path)
			delete(listed, f.Path)
		}
	}
}

func fileText(f snapshot.FileRef) string {
	s := fmt.Sprintf("%d bytes, crc32c %08x", f.Size, f.CRC32C)
	if f.Shared {
		s += ", shared"
	}
	if f.Absolute {
		s += ", absolute"
	}
	return s
}

// entries reads every entry the subtask holds, in any key group.
func (c *opChecker) entries(ctx context.Context, sub *snapshot.Subtask) {
	op := c.op
	decoders := map[string]*entryDecoder{}
	for i := range op.KeyedStates {
		st := &op.KeyedStates[i]
		decoders[st.Name] = c.entryDecoder(st)
	}
	var stats []snapshot.KeyGroupStat
	var total snapshot.Stats
	prev := -1
	all := keygroup.Range{Start: 0, End: max(op.MaxParallelism-1, 0)}
	for e, err := range c.r.Entries(ctx, op, sub.Index, all) {
		if err != nil {
			c.add(CheckRead, sub, nil, "reading keyed state: %v", err)
			return
		}
		c.res.Checked.Entries++
		kg := e.KeyGroup
		if !sub.KeyGroups.Contains(kg) {
			c.add(CheckRange, sub, &kg, "entry of state %q outside the subtask's range %v", e.State, sub.KeyGroups)
		}
		if kg < prev {
			c.add(CheckOrder, sub, &kg, "entry after key group %d: entries must come in key-group order", prev)
		}
		prev = max(prev, kg)
		d, ok := decoders[e.State]
		var st *snapshot.KeyedState
		if ok {
			st = d.st
		}
		switch {
		case !ok:
			c.add(CheckState, sub, &kg, "entry of undeclared keyed state %q", e.State)
		case d.hashable:
			if h, err := d.key.HashCode(e.Key); err != nil {
				c.add(CheckHash, sub, &kg, "state %q key 0x%x cannot be hashed as %s: %v", e.State, e.Key, st.KeyType, err)
			} else if want := keygroup.OfHash(h, op.MaxParallelism); want != kg {
				c.add(CheckHash, sub, &kg, "state %q key %v hashes to key group %d", e.State, c.keyText(st, e.Key), want)
			}
		}
		if ok {
			if what, err := d.check(c, &e); err != nil {
				c.add(CheckDecode, sub, &kg, "state %q key %v: %s does not decode as %s: %v", e.State, c.keyText(st, e.Key), what, d.typeOf(what), err)
			}
		}
		if e.ExpiresAt < 0 {
			c.add(CheckTTL, sub, &kg, "state %q key %v has a negative expiry %d", e.State, c.keyText(st, e.Key), e.ExpiresAt)
		} else if ok && st.TTL == nil && e.ExpiresAt != 0 {
			c.add(CheckTTL, sub, &kg, "state %q has no TTL but key %v carries expiry %d", e.State, c.keyText(st, e.Key), e.ExpiresAt)
		}
		if n := len(stats); n == 0 || stats[n-1].KeyGroup != kg {
			stats = append(stats, snapshot.KeyGroupStat{KeyGroup: kg})
		}
		stats[len(stats)-1].Entries++
		stats[len(stats)-1].Bytes += e.Size()
		total.Entries++
		total.Bytes += e.Size()
	}
	c.keyedFigures(sub, stats, total)
}

// entryDecoder decodes an entry's parts with the codecs of the types its
// state records; a type no codec knows is not checked.
type entryDecoder struct {
	st                      *snapshot.KeyedState
	key, ns, userKey, value snapshot.Codec
	// hashable: the key codec knows the keys' Java hashCode.
	hashable bool
}

func (c *opChecker) entryDecoder(st *snapshot.KeyedState) *entryDecoder {
	codec := func(t snapshot.Type) snapshot.Codec {
		if t.Name == "" {
			return nil
		}
		k, err := c.codecs.Codec(t)
		if err != nil {
			return nil
		}
		return k
	}
	d := &entryDecoder{st: st, key: codec(st.KeyType), value: codec(st.ValueType)}
	if d.key != nil {
		_, err := d.key.HashCode(nil)
		d.hashable = !errors.Is(err, keygroup.ErrUnknownKeyType)
	}
	if len(st.NamespaceType.Name) > 0 {
		d.ns = codec(st.NamespaceType)
	}
	if st.Kind == snapshot.Map {
		d.userKey = codec(st.UserKeyType)
	}
	return d
}

// check names the first part of e that does not decode, counting the parts
// that were not decoded with c.
func (d *entryDecoder) check(c *opChecker, e *snapshot.Entry) (string, error) {
	for _, p := range []struct {
		what  string
		codec snapshot.Codec
		b     []byte
		skip  bool
	}{
		{"key", d.key, e.Key, false},
		{"namespace", d.ns, e.Namespace, len(e.Namespace) == 0},
		{"map key", d.userKey, e.UserKey, false},
		{"value", d.value, e.Value, e.Value == nil},
	} {
		if p.codec == nil || p.skip {
			continue
		}
		if err := snapshot.Check(p.codec, p.b); !c.decoded(e.State, p.what, err) {
			return p.what, err
		}
	}
	return "", nil
}

func (d *entryDecoder) typeOf(what string) snapshot.Type {
	switch what {
	case "key":
		return d.st.KeyType
	case "namespace":
		return d.st.NamespaceType
	case "map key":
		return d.st.UserKeyType
	}
	return d.st.ValueType
}

func (c *opChecker) keyText(st *snapshot.KeyedState, key []byte) any {
	if st == nil {
		return fmt.Sprintf("0x%x", key)
	}
	return c.codecs.Decode(st.KeyType, key)
}

func (c *opChecker) keyedFigures(sub *snapshot.Subtask, stats []snapshot.KeyGroupStat, total snapshot.Stats) {
	if sub.Keyed.Known && (sub.Keyed.Entries != total.Entries || sub.Keyed.Bytes != total.Bytes) {
		c.add(CheckFigures, sub, nil, "metadata records %d keyed entries (%d bytes), the state holds %d (%d bytes)",
			sub.Keyed.Entries, sub.Keyed.Bytes, total.Entries, total.Bytes)
	}
	if sub.KeyGroupStats == nil {
		return
	}
	recorded := map[int]snapshot.KeyGroupStat{}
	for _, g := range sub.KeyGroupStats {
		if g.Entries > 0 {
			recorded[g.KeyGroup] = g
		}
	}
	for _, g := range stats {
		if r := recorded[g.KeyGroup]; r.Entries != g.Entries || r.Bytes != g.Bytes {
			kg := g.KeyGroup
			c.add(CheckFigures, sub, &kg, "metadata records %d entries (%d bytes), the state holds %d (%d bytes)", r.Entries, r.Bytes, g.Entries, g.Bytes)
		}
		delete(recorded, g.KeyGroup)
	}
	for kg, r := range recorded {
		c.add(CheckFigures, sub, &kg, "metadata records %d entries (%d bytes), the state holds none", r.Entries, r.Bytes)
	}
}

// elements reads every operator-state element and checks the counts.
func (c *opChecker) elements(ctx context.Context, sub *snapshot.Subtask) {
	counts := map[string]int64{}
	var total snapshot.Stats
	for el, err := range c.r.Elements(ctx, c.op, sub.Index) {
		if err != nil {
			c.add(CheckRead, sub, nil, "reading operator state: %v", err)
			return
		}
		c.res.Checked.Elements++
		st, ok := c.op.OperatorStateByName(el.State)
		if !ok && counts[el.State] == 0 {
			c.add(CheckState, sub, nil, "element of undeclared operator state %q", el.State)
		}
		if ok && st.ElementType.Name != "" {
			if codec, err := c.codecs.Codec(st.ElementType); err == nil {
				if _, err := codec.Decode(el.Value); !c.decoded(el.State, "element", err) {
					c.add(CheckDecode, sub, nil, "operator state %q: element %d does not decode as %s: %v", el.State, counts[el.State], st.ElementType, err)
				}
			}
		}
		counts[el.State]++
		total.Entries++
		total.Bytes += int64(len(el.Value))
	}
	if sub.Operator.Known && (sub.Operator.Entries != total.Entries || sub.Operator.Bytes != total.Bytes) {
		c.add(CheckFigures, sub, nil, "metadata records %d operator-state elements (%d bytes), the state holds %d (%d bytes)",
			sub.Operator.Entries, sub.Operator.Bytes, total.Entries, total.Bytes)
	}
	if sub.OperatorElements == nil {
		return
	}
	for _, st := range c.op.OperatorStates {
		if want, got := sub.OperatorElements[st.Name], counts[st.Name]; want != got {
			c.add(CheckFigures, sub, nil, "metadata records %d elements of operator state %q, the state holds %d", want, st.Name, got)
		}
	}
}

func (c *opChecker) raw(ctx context.Context, sub *snapshot.Subtask) {
	raw, err := c.r.Raw(ctx, c.op, sub.Index)
	if err != nil {
		c.add(CheckRead, sub, nil, "reading raw state: %v", err)
		return
	}
	if int64(len(raw.Keyed)) != sub.RawKeyedBytes || int64(len(raw.Operator)) != sub.RawOperatorBytes {
		c.add(CheckFigures, sub, nil, "metadata records %d+%d bytes of raw state, the state holds %d+%d",
			sub.RawKeyedBytes, sub.RawOperatorBytes, len(raw.Keyed), len(raw.Operator))
	}
}
