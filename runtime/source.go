package runtime

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/stateutil/stateutil/storage"
)

// Source is a partitioned, replayable input: any partition can be read
// again from any offset it reported, giving the same records.
type Source interface {
	// Partitions is the number of partitions, fixed for the source's life.
	Partitions() int
	// Open starts reading partition p at offset (0 = its beginning).
	Open(ctx context.Context, p int, offset int64) (SourceReader, error)
}

// SourceReader reads one partition.
type SourceReader interface {
	// Next returns the next record and the offset just after it; ok is
	// false at the end of the partition.
	Next() (r Record, offset int64, ok bool, err error)
	Close() error
}

// GeneratorSource is a deterministic source: record o of partition p is
// Gen(p, o), and the partitions hold Records records between them.
type GeneratorSource struct {
	NumPartitions int
	Records       int64
	Gen           func(partition int, offset int64) Record
}

// Partitions implements Source.
func (g *GeneratorSource) Partitions() int { return g.NumPartitions }

// PartitionLen is the number of records partition p holds.
func (g *GeneratorSource) PartitionLen(p int) int64 {
	n := g.Records / int64(g.NumPartitions)
	if int64(p) < g.Records%int64(g.NumPartitions) {
		n++
	}
	return n
}

// Open implements Source.
func (g *GeneratorSource) Open(_ context.Context, p int, offset int64) (SourceReader, error) {
	if p < 0 || p >= g.NumPartitions {
		return nil, fmt.Errorf("generator has no partition %d", p)
	}
	n := g.PartitionLen(p)
	if offset < 0 || offset > n {
		return nil, fmt.Errorf("generator partition %d has %d records; offset %d is outside", p, n, offset)
	}
	return &genReader{g: g, p: p, next: offset, end: n}, nil
}

type genReader struct {
	g         *GeneratorSource
	p         int
	next, end int64
}

func (r *genReader) Next() (Record, int64, bool, error) {
	if r.next >= r.end {
		return Record{}, r.next, false, nil
	}
	rec := r.g.Gen(r.p, r.next)
	r.next++
	return rec, r.next, true, nil
}

func (r *genReader) Close() error { return nil }

// FileSource reads one file per partition (local paths, file:// or hdfs://
// URIs), a line per record: Value is the line as a string, without its
// newline. Offsets are byte offsets.
type FileSource struct {
	Paths []string
	// Storage resolves Paths that are URIs; nil reads local paths only.
	Storage *storage.Registry
}

// Partitions implements Source.
func (f *FileSource) Partitions() int { return len(f.Paths) }

// Open implements Source.
func (f *FileSource) Open(ctx context.Context, p int, offset int64) (SourceReader, error) {
	if p < 0 || p >= len(f.Paths) {
		return nil, fmt.Errorf("file source has no partition %d", p)
	}
	storages := f.Storage
	if storages == nil {
		storages = storage.NewRegistry()
	}
	st, path, err := storages.Resolve(ctx, f.Paths[p])
	if err != nil {
		return nil, err
	}
	file, err := st.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	if offset < 0 || offset > file.Size() {
		file.Close()
		return nil, fmt.Errorf("%q has %d bytes; offset %d is outside", f.Paths[p], file.Size(), offset)
	}
	sr := io.NewSectionReader(file, offset, file.Size()-offset)
	return &fileReader{f: file, r: bufio.NewReader(sr), offset: offset, name: f.Paths[p]}, nil
}

type fileReader struct {
	f      storage.File
	r      *bufio.Reader
	offset int64
	name   string
}

func (r *fileReader) Next() (Record, int64, bool, error) {
	line, err := r.r.ReadString('\n')
	if len(line) == 0 {
		if errors.Is(err, io.EOF) {
			return Record{}, r.offset, false, nil
		}
		return Record{}, r.offset, false, fmt.Errorf("%q at offset %d: %w", r.name, r.offset, err)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return Record{}, r.offset, false, fmt.Errorf("%q at offset %d: %w", r.name, r.offset, err)
	}
	r.offset += int64(len(line))
	if line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	return Record{Value: line}, r.offset, true, nil
}

func (r *fileReader) Close() error { return r.f.Close() }
