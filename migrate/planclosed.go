package migrate

import "errors"

// ErrPlanClosed reports a plan whose staging area was committed or aborted.
var ErrPlanClosed = errors.New("plan closed")
