// Command serializerscan lists the serializer snapshot classes that Flink's
// jars ship: every concrete class that implements
// org.apache.flink.api.common.typeutils.TypeSerializerSnapshot, directly
// or through its superclasses and interfaces, read from the class files'
// headers without loading them (scripts/flink-serializer-classes.sh).
//
// usage: serializerscan VERSION JAR... > classes.tsv
//
// Each line is "VERSION<TAB>JAR<TAB>CLASS", sorted by class.
package main

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// snapshotInterface is what a serializer snapshot class implements.
const snapshotInterface = "org/apache/flink/api/common/typeutils/TypeSerializerSnapshot"

// header is what a class file says of its class.
type header struct {
	name, super string
	interfaces  []string
	concrete    bool
	jar         string
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: serializerscan VERSION JAR...")
		os.Exit(1)
	}
	classes := map[string]*header{}
	for _, jar := range os.Args[2:] {
		if err := scanJar(jar, classes); err != nil {
			fmt.Fprintf(os.Stderr, "serializerscan: %s: %v\n", jar, err)
			os.Exit(1)
		}
	}
	var out []string
	for name, h := range classes {
		if h.concrete && implements(classes, name, map[string]bool{}) {
			out = append(out, fmt.Sprintf("%s\t%s\t%s", os.Args[1], moduleOf(h.jar), strings.ReplaceAll(name, "/", ".")))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i][strings.LastIndex(out[i], "\t"):] < out[j][strings.LastIndex(out[j], "\t"):]
	})
	for _, l := range out {
		fmt.Println(l)
	}
}

// moduleOf names a jar by its artifact: flink-core-1.20.5.jar is flink-core.
func moduleOf(jar string) string {
	base := strings.TrimSuffix(filepath.Base(jar), ".jar")
	for i := len(base) - 1; i > 0; i-- {
		if base[i] == '-' && base[i+1] >= '0' && base[i+1] <= '9' {
			return base[:i]
		}
	}
	return base
}

// implements reports whether a class reaches the snapshot interface
// through its superclasses and interfaces, as far as the jars tell.
func implements(classes map[string]*header, name string, seen map[string]bool) bool {
	if name == snapshotInterface {
		return true
	}
	h, ok := classes[name]
	if !ok || seen[name] {
		return false
	}
	seen[name] = true
	for _, p := range append([]string{h.super}, h.interfaces...) {
		if p != "" && implements(classes, p, seen) {
			return true
		}
	}
	return false
}

func scanJar(path string, classes map[string]*header) error {
	z, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer z.Close()
	for _, f := range z.File {
		if !strings.HasSuffix(f.Name, ".class") || strings.HasPrefix(f.Name, "META-INF/") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		rc.Close()
		if err != nil {
			return err
		}
		h, err := readHeader(b)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		h.jar = path
		if _, dup := classes[h.name]; !dup { // the first jar given wins, as on a class path
			classes[h.name] = h
		}
	}
	return nil
}

var errTruncated = errors.New("class file truncated")

// readHeader reads a class file's constant pool far enough to name its
// class, superclass and interfaces (JVM specification §4.1, §4.4).
func readHeader(b []byte) (*header, error) {
	if len(b) < 10 || binary.BigEndian.Uint32(b) != 0xCAFEBABE {
		return nil, errors.New("not a class file")
	}
	n := int(binary.BigEndian.Uint16(b[8:]))
	off := 10
	utf8s := map[int]string{}
	classRefs := map[int]int{}
	for i := 1; i < n; i++ {
		if off >= len(b) {
			return nil, errTruncated
		}
		tag := b[off]
		off++
		size := 0
		switch tag {
		case 1: // Utf8
			if off+2 > len(b) {
				return nil, errTruncated
			}
			l := int(binary.BigEndian.Uint16(b[off:]))
			if off+2+l > len(b) {
				return nil, errTruncated
			}
			utf8s[i] = string(b[off+2 : off+2+l])
			size = 2 + l
		case 7: // Class
			if off+2 > len(b) {
				return nil, errTruncated
			}
			classRefs[i] = int(binary.BigEndian.Uint16(b[off:]))
			size = 2
		case 8, 16, 19, 20: // String, MethodType, Module, Package
			size = 2
		case 15: // MethodHandle
			size = 3
		case 3, 4, 9, 10, 11, 12, 17, 18:
			size = 4
		case 5, 6: // Long, Double take two entries
			size = 8
			i++
		default:
			return nil, fmt.Errorf("constant pool tag %d", tag)
		}
		off += size
	}
	if off+8 > len(b) {
		return nil, errTruncated
	}
	access := binary.BigEndian.Uint16(b[off:])
	class := func(idx int) string { return utf8s[classRefs[idx]] }
	h := &header{name: class(int(binary.BigEndian.Uint16(b[off+2:]))), super: class(int(binary.BigEndian.Uint16(b[off+4:])))}
	h.concrete = access&(0x0200|0x0400) == 0 // neither interface nor abstract
	count := int(binary.BigEndian.Uint16(b[off+6:]))
	off += 8
	for i := 0; i < count; i++ {
		if off+2 > len(b) {
			return nil, errTruncated
		}
		h.interfaces = append(h.interfaces, class(int(binary.BigEndian.Uint16(b[off:]))))
		off += 2
	}
	return h, nil
}
