// Package protovalue reads and writes Protobuf messages as stateutil's JSON,
// from the descriptors a user gives (a FileDescriptorSet, as protoc
// --descriptor_set_out writes it): a message is a JSON object of its set
// fields by proto name, nested messages as objects, repeated fields as
// arrays, maps as objects (a key that is not a string as its JSON text),
// enums by name (a number no constant has as the number), bytes as
// 0x-prefixed hex, 64-bit integers as exact numbers, and the floats Java
// has but JSON has not as "NaN", "Infinity" and "-Infinity".
//
// Messages are found by the name of the Java class protoc generates for
// them (java_package, java_outer_classname, java_multiple_files), as a
// Java serializer names the class it wrote. A message decodes only when
// its bytes are exactly what Java's protobuf writes for the value (fields
// in number order, proto3's repeated scalars packed, map entries sorted
// by key, no unknown fields), so that the JSON writes back to the same
// bytes; anything else is ErrNotCanonical, not damage: the descriptors
// are the user's, and may not be the writer's.
package protovalue

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// ErrNotCanonical says bytes do not decode with the descriptors given, or
// not to a value Java's protobuf writes that way.
var ErrNotCanonical = errors.New("not a message as the descriptors describe it and Java's protobuf writes it")

// Set is the messages of one or more descriptor sets, by Java class name.
type Set struct {
	byJava map[string]protoreflect.MessageDescriptor
}

// Parse reads FileDescriptorSets (each a file's bytes, named in errors);
// a file the sets repeat must be the same in each.
func Parse(sets map[string][]byte) (*Set, error) {
	all := &descriptorpb.FileDescriptorSet{}
	seen := map[string][]byte{}
	names := make([]string, 0, len(sets))
	for n := range sets {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		var fds descriptorpb.FileDescriptorSet
		if err := proto.Unmarshal(sets[name], &fds); err != nil {
			return nil, fmt.Errorf("%s: not a FileDescriptorSet (protoc --descriptor_set_out): %s", name, message(err))
		}
		for _, f := range fds.File {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %s", name, message(err))
			}
			if prev, ok := seen[f.GetName()]; ok {
				if !bytes.Equal(prev, b) {
					return nil, fmt.Errorf("%s: %s differs from the one another descriptor set holds", name, f.GetName())
				}
				continue
			}
			seen[f.GetName()] = b
			all.File = append(all.File, f)
		}
	}
	files, err := protodesc.NewFiles(all)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", strings.Join(names, ", "), message(err))
	}
	s := &Set{byJava: map[string]protoreflect.MessageDescriptor{}}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		prefix := javaPackage(fd)
		if opts, _ := fd.Options().(*descriptorpb.FileOptions); !opts.GetJavaMultipleFiles() {
			prefix += outerClassName(fd) + "$"
		}
		s.addMessages(prefix, fd.Messages())
		return true
	})
	return s, nil
}

// message is the text of an error of the protobuf module, which spaces
// its words with random no-break spaces to be matched by no one: with
// plain ones, so that what stateutil prints is the same every time.
func message(err error) string {
	return strings.ReplaceAll(err.Error(), "\u00a0", " ")
}

func (s *Set) addMessages(prefix string, ms protoreflect.MessageDescriptors) {
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		if m.IsMapEntry() {
			continue
		}
		name := prefix + string(m.Name())
		s.byJava[name] = m
		s.addMessages(name+"$", m.Messages())
	}
}

// Message is the message whose generated Java class is class.
func (s *Set) Message(class string) (protoreflect.MessageDescriptor, bool) {
	if s == nil {
		return nil, false
	}
	m, ok := s.byJava[class]
	return m, ok
}

// Len is the number of messages known.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byJava)
}

// javaPackage is the Java package of a file's classes, with its dot.
func javaPackage(fd protoreflect.FileDescriptor) string {
	opts, _ := fd.Options().(*descriptorpb.FileOptions)
	p := opts.GetJavaPackage()
	if p == "" {
		p = string(fd.Package())
	}
	if p == "" {
		return ""
	}
	return p + "."
}

// outerClassName is the class protoc's Java generator wraps a file's
// messages in: java_outer_classname, else the file's base name in camel
// case, with "OuterClass" added when a type of the file has that name.
func outerClassName(fd protoreflect.FileDescriptor) string {
	opts, _ := fd.Options().(*descriptorpb.FileOptions)
	if n := opts.GetJavaOuterClassname(); n != "" {
		return n
	}
	base := strings.TrimSuffix(path.Base(fd.Path()), ".proto")
	var b strings.Builder
	up := true
	for i := 0; i < len(base); i++ {
		c := base[i]
		switch {
		case c >= 'a' && c <= 'z':
			if up {
				c -= 'a' - 'A'
			}
			b.WriteByte(c)
			up = false
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c)
			up = false
		case c >= '0' && c <= '9':
			b.WriteByte(c)
			up = true
		default:
			up = true
		}
	}
	name := b.String()
	if typeNamed(fd.Messages(), fd.Enums(), name) || hasService(fd, name) {
		name += "OuterClass"
	}
	return name
}

func typeNamed(ms protoreflect.MessageDescriptors, es protoreflect.EnumDescriptors, name string) bool {
	for i := 0; i < es.Len(); i++ {
		if string(es.Get(i).Name()) == name {
			return true
		}
	}
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		if string(m.Name()) == name || typeNamed(m.Messages(), m.Enums(), name) {
			return true
		}
	}
	return false
}

func hasService(fd protoreflect.FileDescriptor, name string) bool {
	for i := 0; i < fd.Services().Len(); i++ {
		if string(fd.Services().Get(i).Name()) == name {
			return true
		}
	}
	return false
}

// Decode reads one message of md from b, all of b.
func Decode(md protoreflect.MessageDescriptor, b []byte) (map[string]any, error) {
	m := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{RecursionLimit: maxDepth}).Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotCanonical, message(err))
	}
	if hasUnknown(m) {
		return nil, fmt.Errorf("%w: fields the descriptors do not name", ErrNotCanonical)
	}
	// The JSON must write back to these very bytes: a value Java writes
	// otherwise, or one the JSON does not hold all of (a NaN's payload),
	// is not decoded.
	v := toJSON(m)
	out, err := Encode(md, v)
	if err != nil || !bytes.Equal(out, b) {
		return nil, fmt.Errorf("%w: Java writes this value as 0x%x", ErrNotCanonical, out)
	}
	return v, nil
}

// Encode writes v, a message's JSON, as Java's protobuf writes it.
func Encode(md protoreflect.MessageDescriptor, v any) ([]byte, error) {
	m := dynamicpb.NewMessage(md)
	if err := fromJSON(m, v, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", md.FullName(), err)
	}
	return marshal(nil, m, 0)
}

// maxDepth bounds the nesting of messages.
const maxDepth = 64

func hasUnknown(m protoreflect.Message) bool {
	if len(m.GetUnknown()) > 0 {
		return true
	}
	unknown := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap() && isMessage(fd.MapValue()):
			v.Map().Range(func(_ protoreflect.MapKey, e protoreflect.Value) bool {
				unknown = hasUnknown(e.Message())
				return !unknown
			})
		case fd.IsList() && isMessage(fd):
			for i := 0; i < v.List().Len() && !unknown; i++ {
				unknown = hasUnknown(v.List().Get(i).Message())
			}
		case !fd.IsList() && !fd.IsMap() && isMessage(fd):
			unknown = hasUnknown(v.Message())
		}
		return !unknown
	})
	return unknown
}

func isMessage(fd protoreflect.FieldDescriptor) bool {
	return fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind
}
