package filesystem_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/cmd"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/snapshot/verify"
)

var ctx = context.Background()

// writeGenerated writes the generated snapshot of cfg to loc in the
// filesystem format.
func writeGenerated(t testing.TB, loc string, cfg generate.Config, opts snapshot.WriteOptions) {
	t.Helper()
	f, err := testReg.Lookup("filesystem")
	if err != nil {
		t.Fatal(err)
	}
	w, err := testReg.Create(ctx, f, loc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generate.Write(ctx, w, cfg); err != nil {
		w.Abort(ctx)
		t.Fatal(err)
	}
}

func smallConfig() generate.Config {
	c := generate.Default()
	c.Keys, c.Parallelism, c.MaxParallelism = 12, 2, 16
	return c
}

// checkDamage opens dir and verifies it; the damage must be reported as
// corrupt, by snapshot.Open or as a verify finding, naming the file.
func checkDamage(dir string) (*verify.Result, error) {
	r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return verify.Check(ctx, dir, r, testReg.Codecs)
}

// Every single-byte flip in every file of a small snapshot is reported as
// corrupt by snapshot.Open or verify.Check, naming the file, and for
// keyed state the key group; a sample of them also through `stateutil
// verify`, with exit code 2.
func TestEveryByteFlipFailsVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chk-1")
	writeGenerated(t, dir, smallConfig(), snapshot.WriteOptions{InlineThreshold: 8})
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) < 5 {
		t.Fatalf("want _metadata and several state files, have %v", ents)
	}
	if res, err := checkDamage(dir); err != nil || !res.OK {
		t.Fatalf("undamaged snapshot: %v %+v", err, res)
	}
	start := time.Now()
	flips, viaOpen, viaVerify, viaCmd := 0, 0, 0, 0
	for _, de := range ents {
		name := de.Name()
		p := filepath.Join(dir, name)
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fh, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for off := range orig {
			for _, mask := range []byte{0xff} {
				fh.WriteAt([]byte{orig[off] ^ mask}, int64(off))
				res, err := checkDamage(dir)
				var code int
				var stdout, stderr bytes.Buffer
				sampled := off%31 == 0
				if sampled {
					code = cmd.Run(ctx, []string{"verify", dir}, &stdout, &stderr)
				}
				fh.WriteAt(orig[off:off+1], int64(off))
				flips++
				where := func() string { return name + " byte " + strconv.Itoa(off) + " ^" + strconv.Itoa(int(mask)) }
				switch {
				case err != nil:
					viaOpen++
					if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), name) {
						t.Errorf("%s: snapshot.Open: %v; want ErrCorrupt naming %s", where(), err, name)
					}
				case res.OK:
					t.Errorf("%s: verify found nothing", where())
				default:
					viaVerify++
					msg := findings(res)
					if !strings.Contains(msg, name) {
						t.Errorf("%s: findings do not name the file: %s", where(), msg)
					}
					if strings.HasSuffix(name, ".keyed") && !strings.Contains(msg, "key group") {
						t.Errorf("%s: findings do not name the key group: %s", where(), msg)
					}
				}
				if sampled {
					viaCmd++
					if out := stdout.String() + stderr.String(); code != cmd.ExitCorrupt || !strings.Contains(out, name) {
						t.Errorf("%s: stateutil verify: exit %d, output %q; want exit %d naming %s", where(), code, out, cmd.ExitCorrupt, name)
					}
				}
			}
		}
		fh.Close()
	}
	if res, err := checkDamage(dir); err != nil || !res.OK {
		t.Fatalf("restored snapshot: %v %+v", err, res)
	}
	t.Logf("%d flips in %d files: %d refused by snapshot.Open, %d found by verify.Check; %d also through `stateutil verify` (exit 2); %v",
		flips, len(ents), viaOpen, viaVerify, viaCmd, time.Since(start).Round(time.Millisecond))
}

func findings(res *verify.Result) string {
	var b strings.Builder
	for _, f := range res.Findings {
		b.WriteString(f.String())
		b.WriteString("\n")
	}
	return b.String()
}
