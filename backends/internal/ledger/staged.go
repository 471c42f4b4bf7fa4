package ledger

import (
	"fmt"
	"path"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/snapshot"
)

// Staged closes l (see Close) and lists its finished subtasks as a
// staging writer hands them on (snapshot.Stager): per subtask, layout's
// value msgpack-encoded, and the files it wrote (files, by their paths in
// dir) as storage paths.
func (l *Ledger[T]) Staged(dir string, layout func(T) any, files func(Finished[T]) ([]snapshot.FileRef, error)) ([]snapshot.StagedSubtask, error) {
	done, err := l.Close()
	if err != nil {
		return nil, err
	}
	out := make([]snapshot.StagedSubtask, 0, len(done))
	for _, f := range done {
		b, err := msgpack.Marshal(layout(f.Value))
		if err != nil {
			return nil, err
		}
		s := snapshot.StagedSubtask{OperatorID: f.OperatorID, Operator: f.Operator, Index: f.Index, Subtask: f.Subtask, Layout: b}
		refs, err := files(f)
		if err != nil {
			return nil, err
		}
		for _, ref := range refs {
			ref.Path = path.Join(dir, ref.Path)
			s.Files = append(s.Files, ref)
		}
		out = append(out, s)
	}
	return out, nil
}

// Adopt records subtask index of op, which another writer staged in this
// writer's directory (snapshot.Adopter), as finished with sub and value;
// files, the files it wrote, must be plain names in the directory.
func (l *Ledger[T]) Adopt(op *snapshot.Operator, index int, sub *snapshot.Subtask, files []snapshot.FileRef, value T) error {
	for _, ref := range files {
		if strings.ContainsAny(ref.Path, `/\`) || ref.Path == "." || ref.Path == ".." {
			return fmt.Errorf("operator %q subtask %d: staged file %q is not a plain name", op.Label(), index, ref.Path)
		}
	}
	if _, err := l.Start(op, index, sub.KeyGroups); err != nil {
		return err
	}
	l.Finish(op, index, sub, value)
	return nil
}
