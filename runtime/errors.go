package runtime

import "errors"

// ErrNotKeyed reports keyed state used outside a keyed operator.
var ErrNotKeyed = errors.New("keyed state is only available in a keyed operator (after keyBy)")

// ErrNoCurrentKey reports keyed state read or written while no record is
// being processed, for example in Open.
var ErrNoCurrentKey = errors.New("keyed state accessed with no current key (only inside Process)")

// ErrStateDescriptor reports an invalid or conflicting state descriptor.
var ErrStateDescriptor = errors.New("invalid state descriptor")

// ErrJob reports an invalid job graph or run options.
var ErrJob = errors.New("invalid job")

// ErrInjectedFailure is the failure a test injects into a running job.
var ErrInjectedFailure = errors.New("injected failure")

// ErrIncompatibleSnapshot reports a snapshot the job cannot start from: a
// changed max parallelism, a parallelism above the snapshot's max
// parallelism, or state for an operator the job does not have.
var ErrIncompatibleSnapshot = errors.New("snapshot incompatible with job")
