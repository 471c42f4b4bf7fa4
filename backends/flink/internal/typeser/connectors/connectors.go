package connectors

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// Connectors keep their operator state as byte[] elements (Flink's
// BytePrimitiveArraySerializer), each the SimpleVersionedSerialization
// (int version, int length, bytes) of the connector's own serializer,
// which no serializer snapshot names. The state's name says which
// connector state it can be; an element is shown decoded only when one
// layout parses it whole and writes it back to the same bytes, else as
// the byte[] it is.

// connectorLayout decodes and writes one connector serializer's data (the
// bytes after the version and length) of a version it knows.
type connectorLayout struct {
	name   string
	tag    string // the key naming the layout in its JSON object: "@" + tag
	decode func(r *wire.Reader, version int32) any
	encode func(w *connWriter, v map[string]any) (version int32)
}

// connectorStates are the layouts each operator state name can hold.
var connectorStates = map[string][]connectorLayout{
	// SourceOperator's split state.
	"SourceReaderState": {fileSourceSplitLayout, kafkaSplitLayout},
	// SinkWriterOperator's writer state (sink v2).
	"writer_raw_states": {fileWriterBucketStateLayout, kafkaWriterStateLayout},
	// CommitterOperator's committables (sink v2).
	"streaming_committer_raw_states": {committableCollectorLayout},
}

// Family decodes the states connectors keep, by their names.
var Family = &typeser.Family{Name: "connectors", StateCodecs: connectorCodecs()}

func connectorCodecs() map[string]func() typeser.StateCodec {
	out := map[string]func() typeser.StateCodec{}
	for state, layouts := range connectorStates {
		out[state] = func() typeser.StateCodec {
			return connectorCodec{Codec: typeser.Codec{S: &typeser.SerializerSnapshot{Class: typeser.CoreExprs["byte[]"]}}, layouts: layouts}
		}
	}
	return out
}

// connectorCodec decodes the byte[] elements of one connector state.
type connectorCodec struct {
	typeser.Codec // byte[]
	layouts       []connectorLayout
}

// Decode shows an element decoded when exactly one layout parses it
// whole and writes it back byte for byte, else as byte[] hex.
func (c connectorCodec) Decode(b []byte) (any, error) {
	r := wire.NewReader(b, "value", 0)
	data := r.Bytes32("byte array")
	if r.Err != nil {
		return nil, r.Err
	}
	if r.Remaining() != 0 {
		return nil, fmt.Errorf("%d bytes after the value", r.Remaining())
	}
	// The operators frame every element (version, length, bytes) whatever
	// the connector: a length that disagrees is damage.
	fr := wire.NewReader(data, "value", 4)
	fr.I32("serializer version")
	at := fr.Pos()
	if n := fr.I32("serialized length"); fr.Err == nil && int(n) != fr.Remaining() {
		fr.FailAt(at, "connector state element: serialized length %d, but %d bytes follow", n, fr.Remaining())
	}
	if fr.Err != nil {
		return nil, fr.Err
	}
	var found any
	fits := 0
	for _, l := range c.layouts {
		if v, ok := l.parse(data); ok {
			found, fits = v, fits+1
		}
	}
	if fits != 1 {
		return "0x" + hex.EncodeToString(data), nil
	}
	return found, nil
}

// Encode writes a decoded element back; byte[] hex stays as it is.
func (c connectorCodec) Encode(v any) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return c.Codec.Encode(v)
	}
	for _, l := range c.layouts {
		if m["@"+l.tag] == l.name {
			data, err := l.write(m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", l.name, err)
			}
			return typeser.AppendBytes32(nil, data), nil
		}
	}
	return nil, fmt.Errorf("not a value of this state: want byte[] hex or one of its connector layouts")
}

// parse decodes data (version, length, bytes) as l, if it fits whole and
// writes back unchanged.
func (l connectorLayout) parse(data []byte) (any, bool) {
	r := wire.NewReader(data, "value", 0)
	version := r.I32("version")
	payload := r.Bytes32("serialized")
	if r.Err != nil || r.Remaining() != 0 {
		return nil, false
	}
	pr := wire.NewReader(payload, "value", 0)
	v := l.decode(pr, version)
	if pr.Err != nil || pr.Remaining() != 0 || v == nil {
		return nil, false
	}
	m := v.(map[string]any)
	m["@"+l.tag] = l.name
	back, err := l.write(m)
	if err != nil || !bytes.Equal(back, data) {
		return nil, false
	}
	return m, true
}

// write encodes v as version, length, bytes.
func (l connectorLayout) write(v map[string]any) ([]byte, error) {
	w := &connWriter{}
	version := l.encode(w, v)
	if w.err != nil {
		return nil, w.err
	}
	return typeser.AppendBytes32(binary.BigEndian.AppendUint32(nil, uint32(version)), w.b), nil
}

// connWriter writes Java DataOutput values from decoded JSON; the first
// error sticks.
type connWriter struct {
	b   []byte
	err error
}

func (w *connWriter) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, args...)
	}
}

func (w *connWriter) int(v any, bits int, what string) int64 {
	if n, ok := v.(int64); ok { // as Decode made it
		v = json.Number(strconv.FormatInt(n, 10))
	}
	n, err := typeser.Integer(v, bits)
	if err != nil {
		w.fail("%s: %v", what, err)
	}
	return n
}

func (w *connWriter) i16(v any, what string) {
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(w.int(v, 16, what)))
}

func (w *connWriter) i32(v any, what string) {
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(w.int(v, 32, what)))
}

func (w *connWriter) i64(v any, what string) {
	w.b = binary.BigEndian.AppendUint64(w.b, uint64(w.int(v, 64, what)))
}

func (w *connWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *connWriter) str(v any, what string) string {
	s, ok := v.(string)
	if !ok {
		w.fail("%s: want a string, not %v", what, v)
	}
	return s
}

// utf writes Java's writeUTF.
func (w *connWriter) utf(v any, what string) {
	enc := wire.AppendModifiedUTF8(nil, w.str(v, what))
	if len(enc) > 0xFFFF {
		w.fail("%s: %d bytes, writeUTF takes at most 65535", what, len(enc))
	}
	w.b = append(binary.BigEndian.AppendUint16(w.b, uint16(len(enc))), enc...)
}

func (w *connWriter) obj(v any, what string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		w.fail("%s: want an object, not %v", what, v)
	}
	return m
}

func (w *connWriter) list(v any, what string) []any {
	l, ok := v.([]any)
	if !ok {
		w.fail("%s: want a list, not %v", what, v)
	}
	return l
}

// framed writes the (version, length, bytes) frame body writes.
func (w *connWriter) framed(version int32, body func(w *connWriter)) {
	inner := &connWriter{}
	body(inner)
	if inner.err != nil {
		w.fail("%v", inner.err)
	}
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(version))
	w.b = typeser.AppendBytes32(w.b, inner.b)
}

// readFramed reads a (version, length, bytes) frame and decodes its bytes
// with decode, which must consume them whole.
func readFramed(r *wire.Reader, what string, decode func(r *wire.Reader, version int32) any) any {
	version := r.I32(what + " version")
	at := r.Pos() + 4
	payload := r.Bytes32(what)
	if r.Err != nil {
		return nil
	}
	pr := wire.NewReader(payload, r.File, at)
	v := decode(pr, version)
	if pr.Err == nil && pr.Remaining() != 0 {
		pr.Fail("%s: %d bytes left over", what, pr.Remaining())
	}
	if pr.Err != nil {
		r.Err = pr.Err
		return nil
	}
	return v
}

// notDecodedFrame keeps a frame whose serializer is not known here (a
// file system's recoverable, another sink's committable) as its bytes:
// version, length and data.
func notDecodedFrame(r *wire.Reader, class string) any {
	start := r.Off
	r.I32(class + " version")
	r.Bytes32(class)
	if r.Err != nil {
		return nil
	}
	return snapshot.NotDecoded{Class: class, Bytes: bytes.Clone(r.Buf[start:r.Off])}
}

// writeNotDecoded writes back a frame notDecodedFrame kept.
func (w *connWriter) notDecoded(v any, class string) bool {
	if nd, ok := v.(snapshot.NotDecoded); ok && nd.Class == class {
		w.b = append(w.b, nd.Bytes...)
		return true
	}
	m, ok := v.(map[string]any)
	if !ok || m["@class"] != class {
		return false
	}
	raw, err := typeser.HexValue(m["@bytes"])
	if err != nil {
		w.fail("%s: %v", class, err)
	}
	w.b = append(w.b, raw...)
	return true
}

// num renders an integer as stateutil renders Java longs and ints.
func num(n int64) any { return n }

// --- FileSource -------------------------------------------------------------

// fileSourceSplitLayout is FileSourceSplitSerializer version 1.
var fileSourceSplitLayout = connectorLayout{
	name: "FileSourceSplit",
	tag:  "split",
	decode: func(r *wire.Reader, version int32) any {
		if version != 1 {
			return nil
		}
		m := map[string]any{"id": r.UTF("split id"), "path": readFlinkPath(r)}
		m["offset"] = num(r.I64("offset"))
		m["length"] = num(r.I64("length"))
		m["modificationTime"] = num(r.I64("modification time"))
		m["fileSize"] = num(r.I64("file size"))
		n := r.Count32(2, "host names")
		hosts := make([]any, 0, n)
		for i := 0; i < n && r.Err == nil; i++ {
			hosts = append(hosts, r.UTF("host name"))
		}
		m["hostnames"] = hosts
		m["readerPosition"] = nil
		if r.Bool("reader position present") {
			m["readerPosition"] = map[string]any{"offset": num(r.I64("position offset")), "recordsAfterOffset": num(r.I64("records after offset"))}
		}
		return m
	},
	encode: func(w *connWriter, m map[string]any) int32 {
		w.utf(m["id"], "id")
		w.flinkPath(m["path"])
		for _, k := range []string{"offset", "length", "modificationTime", "fileSize"} {
			w.i64(m[k], k)
		}
		hosts := w.list(m["hostnames"], "hostnames")
		w.i32(int64(len(hosts)), "hostnames")
		for _, h := range hosts {
			w.utf(h, "host name")
		}
		w.bool(m["readerPosition"] != nil)
		if m["readerPosition"] != nil {
			p := w.obj(m["readerPosition"], "readerPosition")
			w.i64(p["offset"], "readerPosition.offset")
			w.i64(p["recordsAfterOffset"], "readerPosition.recordsAfterOffset")
		}
		return 1
	},
}

// pathParts are the URI parts Flink's Path.serializeToDataOutputView
// writes, each a nullable StringValue, the port an int between host and
// path.
var pathParts = []string{"scheme", "userInfo", "host", "port", "path", "query", "fragment"}

// readFlinkPath reads a Path as Flink writes it: null, or its URI's parts.
func readFlinkPath(r *wire.Reader) any {
	if !r.Bool("path present") {
		return nil
	}
	m := map[string]any{}
	for _, part := range pathParts {
		if part == "port" {
			m[part] = num(int64(r.I32("port")))
			continue
		}
		m[part] = nil
		if r.Bool(part + " present") {
			at := r.Pos()
			s := typeser.ReadStringValue(r)
			if s == nil && r.Err == nil {
				r.FailAt(at, "%s: present but null", part)
			}
			m[part] = s
		}
	}
	return m
}

func (w *connWriter) flinkPath(v any) {
	w.bool(v != nil)
	if v == nil {
		return
	}
	m := w.obj(v, "path")
	for _, part := range pathParts {
		switch {
		case part == "port":
			w.i32(m[part], "path.port")
		case m[part] == nil:
			w.bool(false)
		default:
			w.bool(true)
			w.b = typeser.AppendStringValue(w.b, w.str(m[part], "path."+part))
		}
	}
}

// --- FileSink ---------------------------------------------------------------

// Magic numbers of the file sink's serializers.
const (
	bucketStateMagic = 0x1e764b79
	committableMagic = 0x1e765c80
	inProgressMagic  = 0xb3a4073d
	pendingMagic     = 0x2c853c89
	localRecMagic    = 0x1e744b57
	collectorMagic   = 0xb91f252c
)

func readMagic(r *wire.Reader, want uint32, what string) bool {
	at := r.Pos()
	if got := uint32(r.I32(what + " magic number")); r.Err == nil && got != want {
		r.FailAt(at, "%s: magic number %08x, want %08x", what, got, want)
	}
	return r.Err == nil
}

func (w *connWriter) magic(m uint32) { w.b = binary.BigEndian.AppendUint32(w.b, m) }

// fileWriterBucketStateLayout is FileWriterBucketStateSerializer version 3
// (what Flink 1.15 and later write).
var fileWriterBucketStateLayout = connectorLayout{
	name: "FileWriterBucketState",
	tag:  "writerState",
	decode: func(r *wire.Reader, version int32) any {
		if version != 3 || !readMagic(r, bucketStateMagic, "bucket state") {
			return nil
		}
		m := map[string]any{"bucketId": readFramed(r, "bucket id", readVersionedString)}
		m["bucketPath"] = r.UTF("bucket path")
		m["inProgressFileCreationTime"] = num(r.I64("creation time"))
		m["inProgressFile"] = nil
		if r.Bool("in-progress file present") {
			m["inProgressFile"] = readInProgressFile(r)
		}
		return m
	},
	encode: func(w *connWriter, m map[string]any) int32 {
		w.magic(bucketStateMagic)
		w.framed(1, func(w *connWriter) { w.versionedString(m["bucketId"]) })
		w.utf(m["bucketPath"], "bucketPath")
		w.i64(m["inProgressFileCreationTime"], "inProgressFileCreationTime")
		w.bool(m["inProgressFile"] != nil)
		if m["inProgressFile"] != nil {
			w.inProgressFile(m["inProgressFile"])
		}
		return 3
	},
}

// readVersionedString is SimpleVersionedStringSerializer version 1: a
// little-endian byte count, then UTF-8.
func readVersionedString(r *wire.Reader, version int32) any {
	if version != 1 {
		r.Fail("bucket id: serializer version %d, want 1", version)
		return nil
	}
	b := r.Take(4, "bucket id length")
	if b == nil {
		return nil
	}
	n := r.Count(int64(int32(binary.LittleEndian.Uint32(b))), 1, "bucket id", r.Pos()-4)
	return string(r.Take(n, "bucket id"))
}

func (w *connWriter) versionedString(v any) {
	s := w.str(v, "bucketId")
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(s)))
	w.b = append(w.b, s...)
}

// readInProgressFile reads an in-progress file recoverable frame: the
// output-stream-based part file writer's (version 2), else kept whole.
func readInProgressFile(r *wire.Reader) any {
	if v := tryFrame(r, func(r *wire.Reader, version int32) any {
		if version != 2 || !readMagic(r, inProgressMagic, "in-progress file") {
			return nil
		}
		m := map[string]any{"path": nil}
		if r.Bool("path present") {
			m["path"] = r.UTF("path")
		}
		m["resumable"] = readRecoverable(r, "ResumeRecoverable")
		return m
	}); v != nil {
		return v
	}
	return notDecodedFrame(r, "InProgressFileRecoverable")
}

func (w *connWriter) inProgressFile(v any) {
	if w.notDecoded(v, "InProgressFileRecoverable") {
		return
	}
	m := w.obj(v, "inProgressFile")
	w.framed(2, func(w *connWriter) {
		w.magic(inProgressMagic)
		w.optionalUTF(m["path"], "path")
		w.recoverable(m["resumable"], "ResumeRecoverable")
	})
}

// readPendingFile reads a pending file recoverable frame like
// readInProgressFile.
func readPendingFile(r *wire.Reader) any {
	if v := tryFrame(r, func(r *wire.Reader, version int32) any {
		if version != 2 || !readMagic(r, pendingMagic, "pending file") {
			return nil
		}
		m := map[string]any{"path": nil}
		if r.Bool("path present") {
			m["path"] = r.UTF("path")
		}
		m["size"] = num(r.I64("size"))
		m["commitRecoverable"] = readRecoverable(r, "CommitRecoverable")
		return m
	}); v != nil {
		return v
	}
	return notDecodedFrame(r, "PendingFileRecoverable")
}

func (w *connWriter) pendingFile(v any) {
	if w.notDecoded(v, "PendingFileRecoverable") {
		return
	}
	m := w.obj(v, "pendingFile")
	w.framed(2, func(w *connWriter) {
		w.magic(pendingMagic)
		w.optionalUTF(m["path"], "path")
		w.i64(m["size"], "size")
		w.recoverable(m["commitRecoverable"], "CommitRecoverable")
	})
}

func (w *connWriter) optionalUTF(v any, what string) {
	w.bool(v != nil)
	if v != nil {
		w.utf(v, what)
	}
}

// readRecoverable reads a file system's recoverable frame: the local file
// system's (LocalRecoverableSerializer version 1, little-endian), else
// kept whole (HDFS, S3 and others have their own).
func readRecoverable(r *wire.Reader, class string) any {
	if v := tryFrame(r, func(r *wire.Reader, version int32) any {
		b := r.Take(20, "local recoverable")
		if version != 1 || b == nil || binary.LittleEndian.Uint32(b) != localRecMagic {
			return nil
		}
		offset := int64(binary.LittleEndian.Uint64(b[4:]))
		target := r.Take(int(binary.LittleEndian.Uint32(b[12:])), "target file")
		temp := r.Take(int(binary.LittleEndian.Uint32(b[16:])), "temp file")
		if r.Err != nil {
			return nil
		}
		return map[string]any{"@recoverable": "LocalRecoverable", "offset": num(offset), "targetFile": string(target), "tempFile": string(temp)}
	}); v != nil {
		return v
	}
	return notDecodedFrame(r, class)
}

func (w *connWriter) recoverable(v any, class string) {
	if w.notDecoded(v, class) {
		return
	}
	m := w.obj(v, class)
	w.framed(1, func(w *connWriter) {
		target, temp := w.str(m["targetFile"], "targetFile"), w.str(m["tempFile"], "tempFile")
		w.b = binary.LittleEndian.AppendUint32(w.b, localRecMagic)
		w.b = binary.LittleEndian.AppendUint64(w.b, uint64(w.int(m["offset"], 64, "offset")))
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(target)))
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(temp)))
		w.b = append(append(w.b, target...), temp...)
	})
}

// tryFrame decodes a frame with decode, leaving r where it was when the
// frame does not parse whole (decode returns nil or fails).
func tryFrame(r *wire.Reader, decode func(r *wire.Reader, version int32) any) any {
	if r.Err != nil {
		return nil
	}
	probe := *r
	v := readFramed(&probe, "frame", decode)
	if probe.Err != nil || v == nil {
		return nil
	}
	*r = probe
	return v
}

// fileSinkCommittable reads FileSinkCommittableSerializer versions 1 and
// 2 (2 adds the bucket id and a compacted file to clean up).
func fileSinkCommittable(r *wire.Reader, version int32) any {
	if (version != 1 && version != 2) || !readMagic(r, committableMagic, "file sink committable") {
		return nil
	}
	m := map[string]any{"@committable": "FileSinkCommittable", "@version": num(int64(version))}
	if version == 2 {
		m["bucketId"] = r.UTF("bucket id")
	}
	m["pendingFile"], m["inProgressFileToCleanup"] = nil, nil
	if r.Bool("pending file present") {
		m["pendingFile"] = readPendingFile(r)
	}
	if r.Bool("in-progress file present") {
		m["inProgressFileToCleanup"] = readInProgressFile(r)
	}
	if version == 2 {
		m["compactedFileToCleanup"] = nil
		if r.Bool("compacted file present") {
			m["compactedFileToCleanup"] = r.UTF("compacted file")
		}
	}
	return m
}

func (w *connWriter) fileSinkCommittable(m map[string]any) {
	version := int32(w.int(m["@version"], 32, "@version"))
	if version != 1 && version != 2 {
		w.fail("FileSinkCommittable version %d: want 1 or 2", version)
	}
	w.framed(version, func(w *connWriter) {
		w.magic(committableMagic)
		if version == 2 {
			w.utf(m["bucketId"], "bucketId")
		}
		w.bool(m["pendingFile"] != nil)
		if m["pendingFile"] != nil {
			w.pendingFile(m["pendingFile"])
		}
		w.bool(m["inProgressFileToCleanup"] != nil)
		if m["inProgressFileToCleanup"] != nil {
			w.inProgressFile(m["inProgressFileToCleanup"])
		}
		if version == 2 {
			w.optionalUTF(m["compactedFileToCleanup"], "compactedFileToCleanup")
		}
	})
}

// --- Sink v2 committer -------------------------------------------------------

// committableCollectorLayout is CommittableCollectorSerializer version 2:
// checkpoints (version 0 in Flink 1.18: id, subtasks; version 1 from 1.19
// on adds the number of subtasks after the id), each subtask (version 0 in
// 1.18: commit requests and counts; version 1 from 1.19 on leads with the
// subtask's id; version 2 from 2.0 on drops the drained count) with its
// commit requests (version 0). Committables other than the file and Kafka
// sinks' are kept as bytes.
var committableCollectorLayout = connectorLayout{
	name: "CommittableCollector",
	tag:  "committerState",
	decode: func(r *wire.Reader, version int32) any {
		if version != 2 || !readMagic(r, collectorMagic, "committable collector") {
			return nil
		}
		cv, checkpoints := readVersionedList(r, "checkpoints", func(r *wire.Reader, v int32) any {
			if v != 0 && v != 1 {
				r.Fail("checkpoint serializer version %d, want 0 or 1", v)
				return nil
			}
			c := map[string]any{"checkpointId": num(r.I64("checkpoint id"))}
			if v == 1 {
				c["numberOfSubtasks"] = num(int64(r.I32("number of subtasks")))
			}
			c["subtasksVersion"], c["subtasks"] = readVersionedList(r, "subtasks", readSubtaskCommittables)
			return c
		})
		return map[string]any{"checkpointsVersion": cv, "checkpoints": checkpoints}
	},
	encode: func(w *connWriter, m map[string]any) int32 {
		w.magic(collectorMagic)
		w.versionedList(m["checkpointsVersion"], m["checkpoints"], "checkpoints", func(w *connWriter, version int32, c map[string]any) {
			if version != 0 && version != 1 {
				w.fail("checkpoint version %d: want 0 or 1", version)
			}
			w.i64(c["checkpointId"], "checkpointId")
			if version == 1 {
				w.i32(c["numberOfSubtasks"], "numberOfSubtasks")
			}
			w.versionedList(c["subtasksVersion"], c["subtasks"], "subtasks", (*connWriter).subtaskCommittables)
		})
		return 2
	},
}

// readCommittable reads one committable frame: the file sink's or the
// Kafka sink's, else kept whole.
func readCommittable(r *wire.Reader) any {
	for _, decode := range []func(r *wire.Reader, version int32) any{fileSinkCommittable, kafkaCommittable} {
		if c := tryFrame(r, decode); c != nil {
			return c
		}
	}
	return notDecodedFrame(r, "Committable")
}

func (w *connWriter) committable(v any) {
	if w.notDecoded(v, "Committable") {
		return
	}
	m := w.obj(v, "committable")
	switch m["@committable"] {
	case "FileSinkCommittable":
		w.fileSinkCommittable(m)
	case "KafkaCommittable":
		w.kafkaCommittable(m)
	default:
		w.fail("committable: want a FileSinkCommittable, a KafkaCommittable or @class Committable, not %v", m["@committable"])
	}
}

func readSubtaskCommittables(r *wire.Reader, version int32) any {
	if version < 0 || version > 2 {
		r.Fail("subtask serializer version %d, want 0, 1 or 2", version)
		return nil
	}
	s := map[string]any{}
	if version >= 1 {
		s["subtaskId"] = num(int64(r.I32("subtask id")))
	}
	s["requestsVersion"], s["requests"] = readVersionedList(r, "requests", func(r *wire.Reader, v int32) any {
		if v != 0 {
			r.Fail("request serializer version %d, want 0", v)
			return nil
		}
		c := readCommittable(r)
		return map[string]any{"committable": c, "numberOfRetries": num(int64(r.I32("retries"))), "state": num(int64(r.I32("state")))}
	})
	s["numCommittables"] = num(int64(r.I32("committables")))
	if version <= 1 {
		s["numDrained"] = num(int64(r.I32("drained")))
	}
	s["numFailed"] = num(int64(r.I32("failed")))
	return s
}

func (w *connWriter) subtaskCommittables(version int32, s map[string]any) {
	if version < 0 || version > 2 {
		w.fail("subtask version %d: want 0, 1 or 2", version)
	}
	if version >= 1 {
		w.i32(s["subtaskId"], "subtaskId")
	}
	w.versionedList(s["requestsVersion"], s["requests"], "requests", func(w *connWriter, version int32, q map[string]any) {
		if version != 0 {
			w.fail("request version %d: want 0", version)
		}
		w.committable(q["committable"])
		w.i32(q["numberOfRetries"], "numberOfRetries")
		w.i32(q["state"], "state")
	})
	w.i32(s["numCommittables"], "numCommittables")
	if version <= 1 {
		w.i32(s["numDrained"], "numDrained")
	}
	w.i32(s["numFailed"], "numFailed")
}

// readVersionedList reads SimpleVersionedSerialization's list: one
// version, a count, then each element's length and bytes.
func readVersionedList(r *wire.Reader, what string, decode func(r *wire.Reader, version int32) any) (any, []any) {
	version := r.I32(what + " version")
	n := r.Count32(4, what)
	out := make([]any, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		at := r.Pos() + 4
		b := r.Bytes32(what)
		if r.Err != nil {
			break
		}
		er := wire.NewReader(b, r.File, at)
		v := decode(er, version)
		if er.Err == nil && er.Remaining() != 0 {
			er.Fail("%s: %d bytes left over", what, er.Remaining())
		}
		if er.Err != nil {
			r.Err = er.Err
			break
		}
		out = append(out, v)
	}
	return num(int64(version)), out
}

func (w *connWriter) versionedList(version, items any, what string, each func(w *connWriter, version int32, m map[string]any)) {
	v := int32(w.int(version, 32, what+"Version"))
	l := w.list(items, what)
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(v))
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(len(l)))
	for i, item := range l {
		inner := &connWriter{}
		each(inner, v, w.obj(item, what+"["+strconv.Itoa(i)+"]"))
		if inner.err != nil {
			w.fail("%s[%d]: %v", what, i, inner.err)
		}
		w.b = typeser.AppendBytes32(w.b, inner.b)
	}
}
