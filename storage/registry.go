package storage

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Opener builds a Storage for a parsed URI of its scheme.
type Opener func(ctx context.Context, u *url.URL) (Storage, error)

// Registry maps URI schemes to the storages that serve them. Plain paths
// and file:// URIs are always local disk; every other scheme must be
// registered. A Registry is built once, before use, and only read after.
type Registry struct {
	openers map[string]Opener
}

// NewRegistry returns a registry that knows local disk (file://).
func NewRegistry() *Registry {
	r := &Registry{openers: map[string]Opener{}}
	r.Register("file", openLocal)
	return r
}

// Register makes URIs with scheme resolvable. Registering a scheme twice
// is a programming error and panics.
func (r *Registry) Register(scheme string, open Opener) {
	if _, dup := r.openers[scheme]; dup {
		panic(fmt.Sprintf("storage: scheme %q registered twice", scheme))
	}
	r.openers[scheme] = open
}

// Schemes lists the registered schemes, sorted.
func (r *Registry) Schemes() []string { return slices.Sorted(maps.Keys(r.openers)) }

// Resolve splits a user-supplied location (a plain path, file://..., or
// scheme://host/...) into the Storage that holds it and the path within.
func (r *Registry) Resolve(ctx context.Context, location string) (Storage, string, error) {
	if !strings.Contains(location, "://") {
		return Local(), location, nil
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, "", fmt.Errorf("invalid location %q: %w", location, err)
	}
	open, ok := r.openers[u.Scheme]
	if !ok {
		return nil, "", fmt.Errorf("unsupported storage scheme %q in %q (known: %s)", u.Scheme, location, strings.Join(r.Schemes(), ", "))
	}
	st, err := open(ctx, u)
	if err != nil {
		return nil, "", err
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	return st, p, nil
}
