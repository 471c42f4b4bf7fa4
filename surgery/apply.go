package surgery

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/stateutil/stateutil/snapshot"
)

// Apply is r with edits made, in order: its metadata without the dropped
// states and with the renamed ones under their new names, its entries and
// elements without what the edits remove. An edit that does not fit the
// snapshot is refused here, before anything is read: an unknown operator
// or state (snapshot.ErrNotFound), a rename onto a name the operator has
// (ErrConflict), a key or namespace that is no value of the state's type
// (ErrBadEdit), a type stateutil cannot encode keys of
// (snapshot.ErrUnsupportedVersion). The stats of subtasks whose keyed
// state loses entries become unknown (a scan tells what is left); what
// the edits removed is counted as state is read (Reader.Report).
func Apply(r snapshot.Reader, codecs *snapshot.Codecs, edits []Edit) (*Reader, error) {
	src := r.Snapshot()
	w := &Reader{Reader: r, edits: edits, ops: map[*snapshot.Operator]*opEdit{}}
	byOrig := map[*snapshot.Operator]*opEdit{}
	var order []*opEdit
	opEditOf := func(op *snapshot.Operator) *opEdit {
		oe := byOrig[op]
		if oe == nil {
			oe = newOpEdit(op)
			byOrig[op] = oe
			order = append(order, oe)
		}
		return oe
	}
	for _, e := range edits {
		if e.Op == Load {
			if err := w.addLoad(codecs, e, opEditOf); err != nil {
				return nil, err
			}
			continue
		}
		op, ok := src.Operator(e.Operator)
		if !ok {
			return nil, fmt.Errorf("%w: %s: no operator %q in the snapshot (operators: %s)", snapshot.ErrNotFound, e, e.Operator, labels(src))
		}
		if err := opEditOf(op).add(codecs, e); err != nil {
			return nil, fmt.Errorf("%s: %w", e, err)
		}
	}
	s := *src
	s.Operators = make([]*snapshot.Operator, len(src.Operators))
	for i, op := range src.Operators {
		s.Operators[i] = op
		if oe := byOrig[op]; oe != nil {
			oe.edited = oe.build()
			s.Operators[i] = oe.edited
			w.ops[oe.edited] = oe
		}
	}
	w.snap, w.order = &s, order
	return w, nil
}

// Reader is a snapshot.Reader with edits made (Apply).
type Reader struct {
	snapshot.Reader
	snap  *snapshot.Snapshot
	edits []Edit
	ops   map[*snapshot.Operator]*opEdit // by the edited operator
	order []*opEdit                      // in the order edits name them
	loads []*LoadReport
}

// Snapshot is the edited metadata.
func (w *Reader) Snapshot() *snapshot.Snapshot { return w.snap }

// Unwrap is the reader w edits (snapshot.Unwrapper).
func (w *Reader) Unwrap() snapshot.Reader { return w.Reader }

// Edited lists the operators of the edited snapshot that the edits
// change, in its order.
func (w *Reader) Edited() []*snapshot.Operator {
	var out []*snapshot.Operator
	for _, op := range w.snap.Operators {
		if _, ok := w.ops[op]; ok {
			out = append(out, op)
		}
	}
	return out
}

// stateEdit is what the edits make of one state of an operator.
type stateEdit struct {
	index   int
	scope   string // snapshot.ScopeKeyed or snapshot.ScopeOperator
	source  string // its name in the source
	name    string // its name now
	dropped bool
	renamed bool
	// keys maps the bytes of keys to delete to the key's index in the
	// operator's deletion; nil when none are deleted here. Only entries in
	// namespace ns are, unless anyNS.
	keys  map[string]int
	ns    []byte
	anyNS bool
	found []atomic.Bool // by key index
	// puts counts the puts into the state; putsByKey holds them by the
	// bytes of their key.
	puts      int
	putsByKey map[string][]*put
	// loaded is set when the puts come from a load.
	loaded bool
}

// deletion is an operator's keys to delete.
type deletion struct {
	edit Edit
	// keys are the keys given, one per distinct key (the first spelling).
	keys []string
}

// opEdit is what the edits make of one operator.
type opEdit struct {
	orig, edited *snapshot.Operator
	keyed, oper  []*stateEdit
	keyedBy      map[string]*stateEdit // by source name
	operBy       map[string]*stateEdit
	del          *deletion
	putsByKG     map[int][]*put // in the order edits make them

	mu sync.Mutex
	// kgCounts holds, per key group read whole, per keyed state, what
	// was read and what was kept (before, after); covered the key groups
	// read whole, empty ones too; elemCounts the same of operator state
	// per subtask read whole. What is read twice (a copy that feeds
	// several new subtasks from one old one) counts once.
	kgCounts   map[int][]Counts
	covered    []bool
	elemCounts map[int][]Counts
}

func newOpEdit(op *snapshot.Operator) *opEdit {
	oe := &opEdit{orig: op, keyedBy: map[string]*stateEdit{}, operBy: map[string]*stateEdit{},
		putsByKG: map[int][]*put{}, kgCounts: map[int][]Counts{}, covered: make([]bool, max(op.MaxParallelism, 0)), elemCounts: map[int][]Counts{}}
	for i, ks := range op.KeyedStates {
		se := &stateEdit{index: i, scope: snapshot.ScopeKeyed, source: ks.Name, name: ks.Name}
		oe.keyed = append(oe.keyed, se)
		oe.keyedBy[ks.Name] = se
	}
	for i, os := range op.OperatorStates {
		se := &stateEdit{index: i, scope: snapshot.ScopeOperator, source: os.Name, name: os.Name}
		oe.oper = append(oe.oper, se)
		oe.operBy[os.Name] = se
	}
	return oe
}

// current finds the state an edit names, by its name after the edits
// before it, among states of one scope.
func current(states []*stateEdit, name string) *stateEdit {
	for _, se := range states {
		if !se.dropped && se.name == name {
			return se
		}
	}
	return nil
}

func names(states []*stateEdit) string {
	var out []string
	for _, se := range states {
		if !se.dropped {
			out = append(out, se.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func (oe *opEdit) add(codecs *snapshot.Codecs, e Edit) error {
	switch e.Op {
	case DropState, RenameState:
		return oe.addStateEdit(e)
	case DeleteKeys:
		return oe.addDeletion(codecs, e)
	case Put:
		return oe.addPut(codecs, e)
	}
	return badEditf("unknown edit %q", e.Op)
}

func (oe *opEdit) addStateEdit(e Edit) error {
	if e.State == "" {
		return badEditf("no state named")
	}
	keyed, oper := current(oe.keyed, e.State), current(oe.oper, e.State)
	var se *stateEdit
	var scope []*stateEdit
	switch {
	case keyed != nil && oper != nil:
		return badEditf("operator %q has a keyed and an operator state named %q; stateutil cannot tell which is meant", oe.orig.Label(), e.State)
	case keyed != nil:
		se, scope = keyed, oe.keyed
	case oper != nil:
		se, scope = oper, oe.oper
	default:
		return fmt.Errorf("%w: operator %q has no state %q (keyed states: %s; operator states: %s)",
			snapshot.ErrNotFound, oe.orig.Label(), e.State, names(oe.keyed), names(oe.oper))
	}
	if e.Op == DropState {
		se.dropped = true
		return nil
	}
	switch {
	case e.To == "":
		return badEditf("no new name given")
	case e.To == e.State:
		return badEditf("the new name is the state's name: the rename changes nothing")
	case !utf8.ValidString(e.To) || len(e.To) > snapshot.MaxStringBytes:
		return badEditf("the new name is not UTF-8 text of at most %d bytes", snapshot.MaxStringBytes)
	case current(scope, e.To) != nil:
		return fmt.Errorf("%w: operator %q already has a %s state %q", ErrConflict, oe.orig.Label(), se.scope, e.To)
	}
	if se.scope == snapshot.ScopeKeyed {
		if err := checkTimerName(oe.orig.KeyedStates[se.index], e.To); err != nil {
			return err
		}
	}
	se.name, se.renamed = e.To, true
	return nil
}

// Flink names the states of a timer service "user-timers" (its priority
// queues) by the service and the time domain.
const (
	timerPrefix      = "_timer_state/"
	eventTimers      = timerPrefix + "event_"
	processingTimers = timerPrefix + "processing_"
)

// checkTimerName refuses a name that makes a state what it is not to
// Flink: timers of another time domain, or timers at all.
func checkTimerName(ks snapshot.KeyedState, to string) error {
	switch {
	case ks.Kind != snapshot.Timer && strings.HasPrefix(to, timerPrefix):
		return badEditf("%q names timers (%s...), and %q is a %s state", to, timerPrefix, ks.Name, ks.Kind)
	case ks.Kind == snapshot.Timer && strings.HasPrefix(ks.Name, eventTimers) && !strings.HasPrefix(to, eventTimers):
		return badEditf("timer state %q holds event-time timers: its name must keep the prefix %s", ks.Name, eventTimers)
	case ks.Kind == snapshot.Timer && strings.HasPrefix(ks.Name, processingTimers) && !strings.HasPrefix(to, processingTimers):
		return badEditf("timer state %q holds processing-time timers: its name must keep the prefix %s", ks.Name, processingTimers)
	}
	return nil
}

func (oe *opEdit) addDeletion(codecs *snapshot.Codecs, e Edit) error {
	switch {
	case len(e.Keys) == 0:
		return badEditf("no keys given")
	case oe.del != nil:
		return badEditf("operator %q has keys deleted by another edit already; give all its keys in one", oe.orig.Label())
	case len(live(oe.keyed)) == 0:
		return badEditf("operator %q has no keyed state (operator states: %s)", oe.orig.Label(), names(oe.oper))
	}
	states := live(oe.keyed)
	// A key is one key whatever its spelling: keys are told apart by their
	// bytes in the first state's key type (every keyed state of a Flink
	// operator shares one key serializer).
	d := &deletion{edit: e}
	first := &oe.orig.KeyedStates[states[0].index]
	seen := map[string]bool{}
	for _, text := range e.Keys {
		b, err := encodeKey(codecs, first, text)
		if err != nil {
			return err
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			d.keys = append(d.keys, text)
		}
	}
	matched := 0
	for _, se := range states {
		ks := &oe.orig.KeyedStates[se.index]
		se.anyNS = e.Namespace == ""
		if !se.anyNS {
			ns, ok, err := namespaceOf(codecs, ks, e.Namespace)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			se.ns = ns
		}
		se.keys = make(map[string]int, len(d.keys))
		se.found = make([]atomic.Bool, len(d.keys))
		for i, text := range d.keys {
			b, err := encodeKey(codecs, ks, text)
			if err != nil {
				return err
			}
			se.keys[string(b)] = i
		}
		matched++
	}
	if matched == 0 {
		return badEditf("no keyed state of operator %q has namespace %s (keyed states: %s)", oe.orig.Label(), e.Namespace, names(oe.keyed))
	}
	oe.del = d
	return nil
}

func live(states []*stateEdit) []*stateEdit {
	var out []*stateEdit
	for _, se := range states {
		if !se.dropped {
			out = append(out, se)
		}
	}
	return out
}

// encodeKey is a key as the state stores it: a text that is no value of
// the key type is the user's error, a type stateutil cannot encode keys
// of is unsupported.
func encodeKey(codecs *snapshot.Codecs, ks *snapshot.KeyedState, text string) ([]byte, error) {
	return encodeText(codecs, ks.KeyType, text, fmt.Sprintf("key of state %q", ks.Name))
}

// namespaceOf is a namespace as the state stores it; ok is false for a
// state whose namespaces are of another type, or that has none (its
// namespace type takes any text and keeps nothing of it).
func namespaceOf(codecs *snapshot.Codecs, ks *snapshot.KeyedState, text string) (ns []byte, ok bool, err error) {
	b, err := codecs.EncodeKey(ks.NamespaceType, text)
	switch {
	case errors.Is(err, snapshot.ErrBadValue):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("%w: namespace of state %q: %w", snapshot.ErrUnsupportedVersion, ks.Name, err)
	}
	if codec, err := codecs.Codec(ks.NamespaceType); err == nil && text != "null" {
		if v, err := codec.Decode(b); err == nil && v == nil {
			return nil, false, nil
		}
	}
	return b, true, nil
}

// build is the operator as the edits leave it.
func (oe *opEdit) build() *snapshot.Operator {
	op := oe.orig
	c := *op
	c.KeyedStates, c.OperatorStates = nil, nil
	keyedLoss, operChange := false, false
	for _, se := range oe.keyed {
		ks := op.KeyedStates[se.index]
		keyedLoss = keyedLoss || se.dropped || se.keys != nil || se.puts > 0
		if se.dropped {
			continue
		}
		if se.renamed {
			ks.Name, ks.SourceName = se.name, ks.CarriedName()
		}
		c.KeyedStates = append(c.KeyedStates, ks)
	}
	for _, se := range oe.oper {
		os := op.OperatorStates[se.index]
		operChange = operChange || se.dropped || se.renamed
		if se.dropped {
			continue
		}
		if se.renamed {
			os.Name, os.SourceName = se.name, os.CarriedName()
		}
		c.OperatorStates = append(c.OperatorStates, os)
	}
	c.Subtasks = make([]*snapshot.Subtask, len(op.Subtasks))
	for j, sub := range op.Subtasks {
		if sub == nil {
			continue
		}
		sc := *sub
		if keyedLoss {
			sc.Keyed, sc.KeyGroupStats = snapshot.Stats{}, nil
		}
		if operChange && sub.OperatorElements != nil {
			sc.OperatorElements = snapshot.ElementCounts{}
			for name, n := range sub.OperatorElements {
				se := oe.operBy[name]
				switch {
				case se == nil:
					sc.OperatorElements[name] = n
				case se.dropped:
					sc.Operator.Entries -= n
					sc.Operator.Known = false // the bytes are unknown
				default:
					sc.OperatorElements[se.name] = n
				}
			}
			if !sc.Operator.Known {
				sc.Operator, sc.OperatorElements = snapshot.Stats{}, nil
			}
		}
		sc.Unreadable = nil
		for _, u := range sub.Unreadable {
			by := oe.keyedBy
			if u.Scope == snapshot.ScopeOperator {
				by = oe.operBy
			}
			if se := by[u.State]; u.Scope != snapshot.ScopeRaw && u.State != "" && se != nil {
				if se.dropped {
					continue
				}
				u.State = se.name
			}
			sc.Unreadable = append(sc.Unreadable, u)
		}
		c.Subtasks[j] = &sc
	}
	return &c
}

func labels(s *snapshot.Snapshot) string {
	var out []string
	for _, op := range s.Operators {
		out = append(out, op.Label())
	}
	return strings.Join(out, ", ")
}
