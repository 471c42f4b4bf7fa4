package migrate

import (
	"context"
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// CheckUpgrade says, state by state, what an upgrade of the snapshot at
// source to the readers of readerVersion would do, writing nothing: a
// report whose Blocked counts what stops it. State the readers cannot
// read is judged, not refused.
func CheckUpgrade(ctx context.Context, reg *snapshot.Registry, source, readerVersion string, pathMap map[string]string) (*snapshot.UpgradeReport, error) {
	r, err := reg.Open(ctx, source, snapshot.OpenOptions{PathMap: pathMap})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// State stateutil cannot read is the upgrader's to judge: it blocks
	// what the upgrade would have to read.
	f, err := upgrader(reg, r)
	if err != nil {
		return nil, err
	}
	_, rep, err := f(ctx, r, readerVersion)
	if err != nil {
		return nil, err
	}
	rep.Source = source
	return rep, nil
}

// upgradeReader is r upgraded for the readers of readerVersion, with the
// report; an upgrade that something blocks is refused, naming it.
func upgradeReader(ctx context.Context, reg *snapshot.Registry, r snapshot.Reader, source, readerVersion string) (snapshot.Reader, *snapshot.UpgradeReport, error) {
	f, err := upgrader(reg, r)
	if err != nil {
		return nil, nil, err
	}
	ur, rep, err := f(ctx, r, readerVersion)
	if err != nil {
		return nil, nil, err
	}
	rep.Source = source
	if err := rep.Err(); err != nil {
		return nil, rep, fmt.Errorf("%s: %w", source, err)
	}
	return ur, rep, nil
}

func upgrader(reg *snapshot.Registry, r snapshot.Reader) (snapshot.Upgrader, error) {
	name := r.Snapshot().Format
	f, err := reg.Lookup(name)
	if err != nil {
		return nil, err
	}
	if f.Upgrade == nil {
		return nil, fmt.Errorf("%w: stateutil upgrades snapshots of the flink format, not of %q", snapshot.ErrUnsupportedVersion, name)
	}
	return f.Upgrade, nil
}
