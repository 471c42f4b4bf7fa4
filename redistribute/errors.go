package redistribute

import "errors"

// ErrNotRedistributable reports state that cannot be moved to the
// requested parallelism: raw (user-serialized) state, whose layout only
// its operator knows, or keys whose type has no known hash when max
// parallelism changes.
var ErrNotRedistributable = errors.New("state cannot be redistributed")
