package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// sizeFlag is a byte count written as a number with an optional unit:
// 512, 64KiB, 5MiB, 2GiB (KB, MB and GB mean the same).
type sizeFlag struct{ bytes int64 }

var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"kib", 10}, {"mib", 20}, {"gib", 30}, {"kb", 10}, {"mb", 20}, {"gb", 30}, {"k", 10}, {"m", 20}, {"g", 30}, {"b", 0}}

func (s *sizeFlag) Set(text string) error {
	t := strings.ToLower(strings.TrimSpace(text))
	var shift uint
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, shift = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return fmt.Errorf("want a positive size such as 64MiB or 1GiB, not %q", text)
	}
	s.bytes = n << shift
	return nil
}

func (s *sizeFlag) String() string {
	if s.bytes == 0 {
		return ""
	}
	return strconv.FormatInt(s.bytes, 10)
}

func (s *sizeFlag) Type() string { return "size" }

// addStateSizeCap adds --max-state-size, the memory format's cap.
func addStateSizeCap(f *pflag.FlagSet, s *sizeFlag) {
	f.Var(s, "max-state-size", "the state one subtask may hold in the memory format, as 64MiB or 1GiB (default 5MiB, as Flink's)")
}
