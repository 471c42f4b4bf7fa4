// Package migrate writes new snapshots from existing ones without changing
// their state's layout: conversion between formats, and removing or
// renaming operators. Every function streams from a snapshot.Reader to a
// snapshot.Writer and leaves nothing at the destination on failure.
package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/diff"
)

// ConvertOptions tune Convert.
type ConvertOptions struct {
	// Force replaces an existing snapshot at the destination.
	Force bool
	// StateSizeCap is the target format's limit on the state of one
	// subtask; 0 means none. Convert refuses up front when a subtask is
	// larger, before writing anything.
	StateSizeCap int64
	// Start, if set, is called once with the bytes of state to write,
	// before writing; Progress as entries and elements are written, with
	// their bytes since the last call (about a megabyte at a time).
	Start    func(total int64)
	Progress func(bytes int64)
	// Verify re-reads the destination and compares it with the source
	// entry by entry.
	Verify bool
}

// ConvertResult describes a conversion.
type ConvertResult struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	From        string `json:"from"`
	To          string `json:"to"`
	Operators   int    `json:"operators"`
	Subtasks    int    `json:"subtasks"`
	Entries     int64  `json:"keyed_entries"`
	Elements    int64  `json:"operator_elements"`
	Bytes       int64  `json:"bytes"`
	Verified    bool   `json:"verified"`
}

// ErrVerifyFailed reports a destination that does not read back as the
// source. It wraps snapshot.ErrCorrupt.
var ErrVerifyFailed = fmt.Errorf("%w: converted snapshot differs from its source", snapshot.ErrCorrupt)

// Convert writes the snapshot r (read from src) to dst in format to.
func Convert(ctx context.Context, src string, r snapshot.Reader, to *snapshot.Format, dst string, opts ConvertOptions) (*ConvertResult, error) {
	if to.Create == nil {
		return nil, fmt.Errorf("%w: format %q is read-only", snapshot.ErrUnsupportedVersion, to.Name)
	}
	plan, err := redistribute.NewPlan(ctx, r, redistribute.Request{})
	if err != nil {
		return nil, err
	}
	res := &ConvertResult{Source: src, Destination: dst, From: r.Snapshot().Format, To: to.Name}
	for _, op := range plan.Operators {
		res.Operators++
		for _, sub := range op.Subtasks {
			res.Subtasks++
			res.Entries += sub.KeyedEntries
			res.Elements += sub.OperatorElements
			res.Bytes += sub.Bytes()
			if opts.StateSizeCap > 0 && sub.Bytes() > opts.StateSizeCap {
				return nil, fmt.Errorf("%w: operator %q subtask %d holds %d bytes of state, more than the %d bytes per subtask format %q allows; choose another format",
					snapshot.ErrTooLarge, op.Label(), sub.Index, sub.Bytes(), opts.StateSizeCap, to.Name)
			}
		}
	}
	w, err := to.Create(ctx, dst, snapshot.WriteOptions{Force: opts.Force, StateSizeCap: opts.StateSizeCap})
	if err != nil {
		return nil, err
	}
	if opts.Start != nil {
		opts.Start(res.Bytes)
	}
	if err := redistribute.Execute(ctx, r, w, plan, redistribute.Options{Progress: opts.Progress}); err != nil {
		return nil, err
	}
	if opts.Verify {
		if err := VerifyCopy(ctx, src, r, dst); err != nil {
			return nil, err
		}
		res.Verified = true
	}
	return res, nil
}

// VerifyCopy re-reads dst and compares it with r entry by entry and element
// by element; a difference is ErrVerifyFailed naming the first ones.
func VerifyCopy(ctx context.Context, src string, r snapshot.Reader, dst string) error {
	d, err := snapshot.Open(ctx, dst, snapshot.OpenOptions{})
	if err != nil {
		return fmt.Errorf("re-reading %q: %w", dst, err)
	}
	defer d.Close()
	res, err := diff.Compare(ctx, src, r, dst, d, diff.Options{Entries: true, MaxKeys: 10})
	if err != nil {
		return fmt.Errorf("re-reading %q: %w", dst, err)
	}
	if res.Equal {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrVerifyFailed, summarize(res))
}

func summarize(res *diff.Result) string {
	var errs []error
	for _, c := range res.Changes {
		errs = append(errs, fmt.Errorf("%s %q vs %q", c.Field, c.A, c.B))
	}
	for _, o := range res.OperatorsAdded {
		errs = append(errs, fmt.Errorf("operator %q added", o.Label()))
	}
	for _, o := range res.OperatorsRemoved {
		errs = append(errs, fmt.Errorf("operator %q missing", o.Label()))
	}
	for _, o := range res.Operators {
		if o.Equal {
			continue
		}
		n := len(o.Keys) + int(o.KeysOmitted)
		errs = append(errs, fmt.Errorf("operator %q: %d keys differ, operator states %v differ, %d descriptor changes",
			o.Label(), n, o.ElementsDiffer, len(o.Changes)+len(o.StatesChanged)+len(o.StatesAdded)+len(o.StatesRemoved)))
	}
	return errors.Join(errs...).Error()
}
