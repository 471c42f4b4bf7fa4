package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"path"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// A memory dump is one file, so its shards cannot share it: each staged
// subtask becomes a part file beside the dump's location (one per
// subtask, named with a token of the writer's own), and the committing
// writer reads the parts back and writes the dump. The format holds all
// its state in memory anyway (at most its cap per subtask), so the commit
// holds no more than a single-process write does.

// partKind frames a staged subtask's part file. It is not a memory dump:
// no reader probes it as one.
var partKind = envelope.Kind{Magic: [8]byte{'S', 'T', 'U', 'T', 'M', 'P', 'R', 'T'}, Version: 1, Name: "stateutil memory part"}

// Staged ends w, writes each closed subtask's state to a part file beside
// w's location, and lists them; see snapshot.Stager.
func (w *writer) Staged(ctx context.Context) ([]snapshot.StagedSubtask, error) {
	done, err := w.ledger.Close()
	if err != nil {
		return nil, fmt.Errorf("memory writer: %w", err)
	}
	var tok [4]byte
	_, _ = rand.Read(tok[:])
	dir, base := path.Split(w.path)
	out := make([]snapshot.StagedSubtask, 0, len(done))
	for i, f := range done {
		body, err := msgpack.Marshal(&f.Value)
		if err != nil {
			return nil, err
		}
		data := partKind.Encode(body)
		name := path.Join(dir, fmt.Sprintf("%s.part-%s-%d", base, hex.EncodeToString(tok[:]), i))
		if err := storage.WriteFile(ctx, w.st, name, data); err != nil {
			return nil, err
		}
		out = append(out, snapshot.StagedSubtask{OperatorID: f.OperatorID, Operator: f.Operator, Index: f.Index, Subtask: f.Subtask,
			Files: []snapshot.FileRef{{Path: name, Size: int64(len(data)), CRC32C: crc32.Checksum(data, envelope.Castagnoli)}}})
	}
	return out, nil
}

// Adopt reads a staged subtask's part file back; see snapshot.Adopter.
func (w *writer) Adopt(ctx context.Context, op *snapshot.Operator, s snapshot.StagedSubtask) error {
	if s.Subtask == nil || len(s.Files) != 1 {
		return fmt.Errorf("memory writer: operator %q subtask %d: staged without figures or with %d part files, not 1", op.Label(), s.Index, len(s.Files))
	}
	var st subtaskState
	// Entries carry a few bytes of framing each beyond the state the cap counts.
	if err := partKind.ReadMsgpack(ctx, w.st, s.Files[0].Path, 8*w.cap+1<<20, &st); err != nil {
		return fmt.Errorf("memory writer: operator %q subtask %d: %w", op.Label(), s.Index, err)
	}
	for _, e := range st.Entries {
		if e.State < 0 || e.State >= len(op.KeyedStates) {
			return snapshot.Corrupt(w.st.URI(s.Files[0].Path), -1, "entry of keyed state %d; operator %q has %d", e.State, op.Label(), len(op.KeyedStates))
		}
	}
	if _, err := w.ledger.Start(op, s.Index, s.Subtask.KeyGroups); err != nil {
		return fmt.Errorf("memory writer: %w", err)
	}
	w.ledger.Finish(op, s.Index, s.Subtask, st)
	return nil
}
