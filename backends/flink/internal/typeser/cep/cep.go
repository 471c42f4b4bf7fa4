package cep

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// The state of a CEP operator (flink-cep; SQL's MATCH_RECOGNIZE runs the
// same operator): per key an NFAState (its partial and completed matches),
// and the shared buffer of the events and the nodes of the matches' paths.
//
//   - EventId: an int id, then a long timestamp.
//   - NodeId: a byte, 0 for null, else 1, an EventId and the page name (a
//     StringValue).
//   - DeweyNumber: an int count, then the digits as ints; shown as Flink's
//     toString, the digits joined by dots.
//   - SharedBufferEdge: the target NodeId, then the DeweyNumber.
//   - SharedBufferNode: an int count of edges, then per edge its lock count
//     (an int) and the edge.
//   - Lockable: a lock count (an int), then the element of the nested
//     serializer (an event, or a SharedBufferNode).
//   - NFAState: the partial matches, then the completed ones, each an int
//     count of computation states: the state's name (a StringValue), the
//     previous buffer entry (a NodeId), the version (a DeweyNumber), the
//     start timestamp, from snapshot outer version 2 on the previous
//     event's timestamp where the snapshot's flag says the serializer
//     writes it, then a byte and, when it is 1, the start event's EventId.
//
// The JSON names the fields as Flink's classes do.

// Family is flink-cep's serializers.
var Family = &typeser.Family{
	Name: "cep",
	Kind: kindOf,
	Snapshots: map[string]typeser.SnapshotParser{
		"NFAStateSerializerSnapshot": parseNFAStateSnapshot,
	},
	Exprs: map[string]typeser.ExprLeaf{
		"cep.eventid":     {Class: "org.apache.flink.cep.nfa.sharedbuffer.EventId$EventIdSerializer$EventIdSerializerSnapshot"},
		"cep.nodeid":      {Class: "org.apache.flink.cep.nfa.sharedbuffer.NodeId$NodeIdSerializer$NodeIdSerializerSnapshot"},
		"cep.deweynumber": {Class: "org.apache.flink.cep.nfa.DeweyNumber$DeweyNumberSerializer$DeweyNumberSerializerSnapshot"},
		"cep.edge":        {Class: "org.apache.flink.cep.nfa.sharedbuffer.SharedBufferEdge$SharedBufferEdgeSerializer$SharedBufferEdgeSerializerSnapshot"},
		"cep.node":        {Class: "org.apache.flink.cep.nfa.sharedbuffer.SharedBufferNodeSerializerSnapshotV2"},
		"cep.lockable":    {Class: "org.apache.flink.cep.nfa.sharedbuffer.LockableTypeSerializerSnapshot"},
	},
	Expr:   typeExpr,
	Walk:   walk,
	Sized:  sized,
	Widths: map[string]int{"EventId": 12},
	Encode: encode,
	Schema: schema,
	Notes:  map[string]string{kindMigratedNFA: migratedNote, kindMigratedSharedBuffer: migratedNote},
}

// kindOf classifies the serializers of flink-cep, their snapshots and the
// snapshots' legacy names alike.
func kindOf(n string) string {
	if !strings.HasPrefix(n, "org.apache.flink.cep.") {
		return ""
	}
	switch {
	case strings.Contains(n, "NFAStateSerializer"):
		return "NFAState"
	case strings.Contains(n, "EventId$EventIdSerializer"):
		return "EventId"
	case strings.Contains(n, "NodeId$NodeIdSerializer"):
		return "NodeId"
	case strings.Contains(n, "DeweyNumber$DeweyNumberSerializer"):
		return "DeweyNumber"
	case strings.Contains(n, "SharedBufferEdge$SharedBufferEdgeSerializer"):
		return "SharedBufferEdge"
	case strings.Contains(n, "SharedBufferNodeSerializer") || strings.Contains(n, "SharedBufferNode$SharedBufferNodeSerializer"):
		return "SharedBufferNode"
	case strings.Contains(n, "LockableTypeSerializer") || strings.Contains(n, "Lockable$LockableTypeSerializer"):
		return "Lockable"
	case strings.HasPrefix(n, "org.apache.flink.cep.nfa.NFA$"):
		return kindMigratedNFA
	case strings.HasPrefix(n, "org.apache.flink.cep.nfa.SharedBuffer$"):
		return kindMigratedSharedBuffer
	}
	return ""
}

// Flink 1.5's CEP state, an NFA value with its SharedBuffer (package nfa,
// not nfa.sharedbuffer): not decoded.
const (
	kindMigratedNFA          = "MigratedNFA"
	kindMigratedSharedBuffer = "MigratedSharedBuffer"
	migratedNote             = "Flink 1.5's CEP state: Flink 1.15 to 1.20 keep the class only so that a snapshot naming it parses; no operator restores its values and its serialize throws, so they are not decoded"
)

func typeExpr(s *typeser.SerializerSnapshot, kind string, nested func() string) (string, bool) {
	switch kind {
	case "EventId", "NodeId", "DeweyNumber", "SharedBufferEdge", "SharedBufferNode":
		return map[string]string{"EventId": "cep.eventid", "NodeId": "cep.nodeid", "DeweyNumber": "cep.deweynumber",
			"SharedBufferEdge": "cep.edge", "SharedBufferNode": "cep.node"}[kind], true
	case "Lockable":
		if len(s.Nested) == 1 {
			return "cep.lockable(" + nested() + ")", true
		}
	}
	// An NFAState's layout hangs on its snapshot's outer part, which no
	// type expression spells: its values need the snapshot's bytes.
	return "", false
}

// parseNFAStateSnapshot reads an NFAStateSerializerSnapshot: the composite
// framing, whose outer snapshot is, from version 2 on, the flag saying
// whether computation states carry the previous event's timestamp.
func parseNFAStateSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	r := sr.R
	at := r.Pos()
	if m := r.I32("composite magic"); r.Err == nil && m != typeser.CompositeMagic {
		r.FailAt(at, "composite magic %d, want %d", m, typeser.CompositeMagic)
		return
	}
	s.OuterVersion = r.I32("composite outer version")
	outer := r.Off
	if s.OuterVersion >= 2 {
		r.Bool("NFA state previous-timestamp flag")
	}
	if r.Err != nil {
		return
	}
	s.Outer = r.Buf[outer:r.Off:r.Off]
	if n := sr.NestedSnapshots(s, cont, depth); r.Err == nil && n != 3 {
		r.Fail("NFA state serializer snapshot with %d nested snapshots, want 3", n)
	}
}

// previousTimestamps says whether an NFAState serializer writes each
// computation state's previous timestamp.
func previousTimestamps(s *typeser.SerializerSnapshot) bool {
	return s.OuterVersion >= 2 && len(s.Outer) == 1 && s.Outer[0] == 1
}

func sized(s *typeser.SerializerSnapshot, depth int) bool {
	if typeser.KindOf(s) == "Lockable" {
		return len(s.Nested) == 1 && typeser.SizedDepth(s.Nested[0], depth+1)
	}
	return true
}

// maxDigits bounds a DeweyNumber's digits by what a value can hold.
const maxDigits = 1 << 16

func walk(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	switch typeser.KindOf(s) {
	case "EventId":
		return eventID(r), true
	case "NodeId":
		return nodeID(r), true
	case "DeweyNumber":
		return dewey(r), true
	case "SharedBufferEdge":
		return edge(r), true
	case "SharedBufferNode":
		return node(r), true
	case "NFAState":
		return nfaState(r, previousTimestamps(s)), true
	case "Lockable":
		if len(s.Nested) != 1 {
			return nil, false
		}
		refs := r.I32("lock count")
		if !decode {
			return nil, typeser.SkipValue(r, s.Nested[0], depth+1)
		}
		return map[string]any{"refCounter": int64(refs), "element": typeser.DecodeAny(r, s.Nested[0], depth+1)}, true
	}
	return nil, false
}

func eventID(r *wire.Reader) map[string]any {
	id := r.I32("event id")
	return map[string]any{"id": int64(id), "timestamp": r.I64("event timestamp")}
}

func nodeID(r *wire.Reader) any {
	at := r.Pos()
	switch flag := r.U8("node id flag"); {
	case r.Err != nil:
		return nil
	case flag == 0:
		return nil
	case flag != 1:
		r.FailAt(at, "node id flag %d, Flink writes 0 or 1", flag)
		return nil
	}
	e := eventID(r)
	return map[string]any{"eventId": e, "pageName": typeser.ReadStringValue(r)}
}

func dewey(r *wire.Reader) string {
	n := r.Count32(4, "dewey number length")
	if n > maxDigits {
		r.Fail("dewey number of %d digits", n)
		return ""
	}
	digits := make([]string, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		digits = append(digits, strconv.Itoa(int(r.I32("dewey number digit"))))
	}
	return strings.Join(digits, ".")
}

func edge(r *wire.Reader) map[string]any {
	target := nodeID(r)
	return map[string]any{"target": target, "deweyNumber": dewey(r)}
}

func node(r *wire.Reader) map[string]any {
	n := r.Count32(4+1+4, "shared buffer node edge count")
	edges := make([]any, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		refs := r.I32("edge lock count")
		edges = append(edges, map[string]any{"refCounter": int64(refs), "element": edge(r)})
	}
	return map[string]any{"edges": edges}
}

func nfaState(r *wire.Reader, previous bool) map[string]any {
	return map[string]any{"partialMatches": computations(r, previous, "partial"), "completedMatches": computations(r, previous, "completed")}
}

func computations(r *wire.Reader, previous bool, what string) []any {
	n := r.Count32(1+1+4+8+1, what+" match count")
	out := make([]any, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		c := map[string]any{}
		c["currentStateName"] = typeser.ReadStringValue(r)
		c["previousBufferEntry"] = nodeID(r)
		c["version"] = dewey(r)
		c["startTimestamp"] = r.I64("start timestamp")
		if previous {
			c["previousTimestamp"] = r.I64("previous timestamp")
		}
		at := r.Pos()
		switch flag := r.U8("start event flag"); {
		case r.Err != nil:
		case flag == 1:
			c["startEventID"] = eventID(r)
		case flag == 0:
			c["startEventID"] = nil
		default:
			r.FailAt(at, "start event flag %d, Flink writes 0 or 1", flag)
		}
		out = append(out, c)
	}
	return out
}

func encode(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	var err error
	switch typeser.KindOf(s) {
	case "EventId":
		b, err = appendEventID(b, v)
	case "NodeId":
		b, err = appendNodeID(b, v)
	case "DeweyNumber":
		b, err = appendDewey(b, v)
	case "SharedBufferEdge":
		b, err = appendEdge(b, v)
	case "SharedBufferNode":
		b, err = appendNode(b, v)
	case "NFAState":
		b, err = appendNFAState(b, v, previousTimestamps(s))
	case "Lockable":
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 2 {
			return nil, true, fmt.Errorf(`want {"refCounter": .., "element": ..}, not %v`, v)
		}
		if b, err = typeser.AppendInt(b, m["refCounter"], 32, "refCounter"); err != nil {
			return nil, true, err
		}
		b, err = typeser.EncodeAny(b, s.Nested[0], m["element"], depth+1)
	default:
		return nil, false, nil
	}
	return b, true, err
}

// appendString writes a StringValue, null as Flink writes it.
func appendString(b []byte, v any, what string) ([]byte, error) {
	switch s := v.(type) {
	case nil:
		return append(b, 0), nil
	case string:
		return typeser.AppendStringValue(b, s), nil
	}
	return nil, fmt.Errorf("%s %v is not a string", what, v)
}

func appendEventID(b []byte, v any) ([]byte, error) {
	m, err := typeser.Fields(v, "id", "timestamp")
	if err != nil {
		return nil, fmt.Errorf("event id: %w", err)
	}
	if b, err = typeser.AppendInt(b, m["id"], 32, "event id"); err != nil {
		return nil, err
	}
	return typeser.AppendInt(b, m["timestamp"], 64, "event timestamp")
}

func appendNodeID(b []byte, v any) ([]byte, error) {
	if v == nil {
		return append(b, 0), nil
	}
	m, err := typeser.Fields(v, "eventId", "pageName")
	if err != nil {
		return nil, fmt.Errorf("node id: %w", err)
	}
	if b, err = appendEventID(append(b, 1), m["eventId"]); err != nil {
		return nil, err
	}
	return appendString(b, m["pageName"], "node id: page name")
}

func appendDewey(b []byte, v any) ([]byte, error) {
	text, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("dewey number: want a string of dot-separated digits, not %v", v)
	}
	var digits []string
	if text != "" {
		digits = strings.Split(text, ".")
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(digits)))
	for _, d := range digits {
		n, err := strconv.ParseInt(d, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("dewey number %q: digit %q", text, d)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	return b, nil
}

func appendEdge(b []byte, v any) ([]byte, error) {
	m, err := typeser.Fields(v, "target", "deweyNumber")
	if err != nil {
		return nil, fmt.Errorf("shared buffer edge: %w", err)
	}
	if b, err = appendNodeID(b, m["target"]); err != nil {
		return nil, err
	}
	return appendDewey(b, m["deweyNumber"])
}

func appendNode(b []byte, v any) ([]byte, error) {
	m, err := typeser.Fields(v, "edges")
	if err != nil {
		return nil, fmt.Errorf("shared buffer node: %w", err)
	}
	edges, ok := m["edges"].([]any)
	if !ok {
		return nil, fmt.Errorf("shared buffer node: edges %v are not a list", m["edges"])
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(edges)))
	for i, e := range edges {
		le, err := typeser.Fields(e, "refCounter", "element")
		if err == nil {
			b, err = typeser.AppendInt(b, le["refCounter"], 32, "refCounter")
		}
		if err == nil {
			b, err = appendEdge(b, le["element"])
		}
		if err != nil {
			return nil, fmt.Errorf("edge %d: %w", i, err)
		}
	}
	return b, nil
}

func appendNFAState(b []byte, v any, previous bool) ([]byte, error) {
	m, err := typeser.Fields(v, "partialMatches", "completedMatches")
	if err != nil {
		return nil, fmt.Errorf("NFA state: %w", err)
	}
	for _, what := range []string{"partialMatches", "completedMatches"} {
		list, ok := m[what].([]any)
		if !ok {
			return nil, fmt.Errorf("NFA state: %s %v is not a list", what, m[what])
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(list)))
		for i, c := range list {
			if b, err = appendComputation(b, c, previous); err != nil {
				return nil, fmt.Errorf("%s %d: %w", what, i, err)
			}
		}
	}
	return b, nil
}

func appendComputation(b []byte, v any, previous bool) ([]byte, error) {
	names := []string{"currentStateName", "previousBufferEntry", "version", "startTimestamp", "startEventID"}
	if previous {
		names = append(names, "previousTimestamp")
	}
	m, err := typeser.Fields(v, names...)
	if err != nil {
		return nil, fmt.Errorf("computation state: %w", err)
	}
	if b, err = appendString(b, m["currentStateName"], "computation state: name"); err != nil {
		return nil, err
	}
	if b, err = appendNodeID(b, m["previousBufferEntry"]); err != nil {
		return nil, err
	}
	if b, err = appendDewey(b, m["version"]); err != nil {
		return nil, err
	}
	if b, err = typeser.AppendInt(b, m["startTimestamp"], 64, "start timestamp"); err != nil {
		return nil, err
	}
	if previous {
		if b, err = typeser.AppendInt(b, m["previousTimestamp"], 64, "previous timestamp"); err != nil {
			return nil, err
		}
	}
	if m["startEventID"] == nil {
		return append(b, 0), nil
	}
	return appendEventID(append(b, 1), m["startEventID"])
}

// The SQL types of CEP's values: structs of their fields as walk names
// them.
var (
	int64Schema   = snapshot.Schema{Kind: snapshot.SchemaInt64}
	stringSchema  = snapshot.Schema{Kind: snapshot.SchemaString}
	eventIDSchema = typeser.Struct([]string{"id", "timestamp"}, []snapshot.Schema{int64Schema, int64Schema})
	nodeIDSchema  = typeser.Struct([]string{"eventId", "pageName"}, []snapshot.Schema{eventIDSchema, stringSchema})
	edgeSchema    = typeser.Struct([]string{"target", "deweyNumber"}, []snapshot.Schema{nodeIDSchema, stringSchema})
	nodeSchema    = typeser.Struct([]string{"edges"}, []snapshot.Schema{listOf(
		typeser.Struct([]string{"refCounter", "element"}, []snapshot.Schema{int64Schema, edgeSchema}))})
)

func listOf(elem snapshot.Schema) snapshot.Schema {
	return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &elem, Partial: elem.Partial}
}

func schema(s *typeser.SerializerSnapshot, depth int) (snapshot.Schema, bool) {
	switch typeser.KindOf(s) {
	case "EventId":
		return eventIDSchema, true
	case "NodeId":
		return nodeIDSchema, true
	case "DeweyNumber":
		return stringSchema, true
	case "SharedBufferEdge":
		return edgeSchema, true
	case "SharedBufferNode":
		return nodeSchema, true
	case "Lockable":
		if len(s.Nested) == 1 {
			return typeser.Struct([]string{"refCounter", "element"}, []snapshot.Schema{int64Schema, typeser.SchemaOf(s.Nested[0], depth+1)}), true
		}
	case "NFAState":
		names := []string{"currentStateName", "previousBufferEntry", "version", "startTimestamp"}
		fields := []snapshot.Schema{stringSchema, nodeIDSchema, stringSchema, int64Schema}
		if previousTimestamps(s) {
			names, fields = append(names, "previousTimestamp"), append(fields, int64Schema)
		}
		matches := listOf(typeser.Struct(append(names, "startEventID"), append(fields, eventIDSchema)))
		return typeser.Struct([]string{"partialMatches", "completedMatches"}, []snapshot.Schema{matches, matches}), true
	}
	return snapshot.Schema{}, false
}
