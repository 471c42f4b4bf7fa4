package kryo

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/snapshot"
)

// What the reader needs to know of a class depends on the class and the
// serializer snapshot alone (its registrations, its Kryo version, the
// user's schemas), not on the bytes: it is worked out once per snapshot
// and class, not per object read.

// kryoClass is what is known of one class.
type kryoClass struct {
	name string
	// reg is its registration with a serializer of its own, if custom.
	reg    typeser.KryoRegistration
	custom bool
	// ser is its serializer, where kryo.go or kryo_chill.go decodes it
	// (builtin).
	ser     int
	builtin bool
	// user is the user's layout of it; userArray the component of an
	// array of a user's class.
	user      *classlayout.Class
	userArray string
	noRefs    bool
	final     bool
}

// kryoClasses are the classes of one snapshot known so far, by name.
// The names come from the values' bytes: past kryoClassesMax, the rest
// are worked out each time, not kept.
type kryoClasses struct {
	v5      bool
	regs    []typeser.KryoRegistration
	schemas *snapshot.Schemas
	known   atomic.Pointer[map[string]*kryoClass]
	mu      sync.Mutex // of a change of known
}

const kryoClassesMax = 1024

// classesOf are s's classes known so far.
func classesOf(s *typeser.SerializerSnapshot) *kryoClasses {
	m := s.FamilyMemo(func(m any) bool {
		c, ok := m.(*kryoClasses)
		return ok && c.v5 == s.Kryo5 && len(c.regs) == len(s.KryoRegistrations) && c.schemas == s.Schemas()
	}, func() any {
		return &kryoClasses{v5: s.Kryo5, regs: s.KryoRegistrations, schemas: s.Schemas()}
	})
	return m.(*kryoClasses)
}

// of is what is known of class.
func (cs *kryoClasses) of(class string) *kryoClass {
	if known := cs.known.Load(); known != nil {
		if c, ok := (*known)[class]; ok {
			return c
		}
	}
	c := &kryoClass{name: class, userArray: userArray(cs.schemas, class), final: isFinal(cs.schemas, class),
		noRefs: kryoNoRefs(class, cs.v5) || cs.v5 && isUserEnum(cs.schemas, class)}
	reg, ok := registration(cs.regs, class)
	c.reg, c.custom = reg, ok && reg.Kind != 0
	c.ser, c.builtin = kryoSerializerIn(class, cs.v5)
	c.user, _ = userClass(cs.schemas, class)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	known := map[string]*kryoClass{}
	if old := cs.known.Load(); old != nil {
		if len(*old) >= kryoClassesMax {
			return c
		}
		known = maps.Clone(*old)
	}
	known[class] = c
	cs.known.Store(&known)
	return c
}

// named is the name of a class known that Kryo writes as ASCII b (the
// last byte's high bit set), "" if none: a name read again is not built
// again.
func (cs *kryoClasses) named(b []byte) string {
	var ascii [128]byte
	known := cs.known.Load()
	if known == nil || len(b) > len(ascii) {
		return ""
	}
	n := copy(ascii[:], b)
	ascii[n-1] &= 0x7F
	if c, ok := (*known)[string(ascii[:n])]; ok {
		return c.name
	}
	return ""
}
