// Package flinkharness lets Go tests drive the real-Flink test harness
// (testenv/flink, run through scripts/flink-harness.sh): take a snapshot of a
// test job in a Flink MiniCluster, restore one in Flink, or read one with
// Flink's State Processor API, each with a JSON Lines dump of the state to
// compare with (see testenv/flink/README.md for the dump format).
//
// Tests call Require first: it skips when Java or Maven are missing, or fails
// when STATEUTIL_REQUIRE_FLINK=1.
package flinkharness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DefaultVersions are the Flink versions tests run by default: the newest
// 1.20 and the newest 2.x whose harness builds and runs here.
var DefaultVersions = []string{"1.20.5", "2.3.0"}

// Versions returns the Flink versions to test: STATEUTIL_FLINK_VERSIONS
// (separated by spaces or commas) if set, else DefaultVersions.
func Versions() []string {
	if v := strings.TrimSpace(os.Getenv("STATEUTIL_FLINK_VERSIONS")); v != "" {
		return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' })
	}
	return append([]string(nil), DefaultVersions...)
}

// Script returns the path of scripts/flink-harness.sh (STATEUTIL_FLINK_HARNESS overrides).
func Script() string {
	if s := os.Getenv("STATEUTIL_FLINK_HARNESS"); s != "" {
		return s
	}
	return filepath.Join(RepoRoot(), "scripts", "flink-harness.sh")
}

// RepoRoot is the repository the test runs in, where tests find testdata/
// and scripts/: the nearest directory above the working directory (a
// package's own, under go test) that holds go.mod. It is found from there,
// not from the source file's compiled-in path, which -trimpath leaves out.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic("flinkharness: no working directory: " + err.Error())
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			panic("flinkharness: no go.mod above " + dir)
		}
	}
}

// Available returns nil if the harness can run here (bash, flock, Maven and a
// Java 11..21), else an error that says what is missing.
func Available() error {
	var missing []string
	for _, tool := range []string{"bash", "flock", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if _, err := java(); err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := os.Stat(Script()); err != nil {
		missing = append(missing, "the harness script ("+err.Error()+")")
	}
	if len(missing) > 0 {
		return fmt.Errorf("real-Flink harness unavailable: missing %s", strings.Join(missing, ", "))
	}
	return nil
}

var javaVersion = regexp.MustCompile(`java\.specification\.version = (\d+)`)

// java finds a Java 11..21 the way the script does.
func java() (string, error) {
	var cands []string
	if j := os.Getenv("STATEUTIL_FLINK_JAVA"); j != "" {
		cands = []string{j}
	} else {
		g, _ := filepath.Glob("/usr/lib/jvm/java-17-openjdk-*/bin/java")
		cands = append(cands, g...)
		g, _ = filepath.Glob("/usr/lib/jvm/temurin-17-*/bin/java")
		cands = append(cands, g...)
		if h := os.Getenv("JAVA_HOME"); h != "" {
			cands = append(cands, filepath.Join(h, "bin", "java"))
		}
		if p, err := exec.LookPath("java"); err == nil {
			cands = append(cands, p)
		}
	}
	for _, c := range cands {
		out, err := exec.Command(c, "-XshowSettings:properties", "-version").CombinedOutput()
		if err != nil {
			continue
		}
		if m := javaVersion.FindSubmatch(out); m != nil {
			if v, _ := strconv.Atoi(string(m[1])); v >= 11 && v <= 21 {
				return c, nil
			}
		}
	}
	return "", errors.New("a Java 11..21 (set STATEUTIL_FLINK_JAVA)")
}

// Required reports whether STATEUTIL_REQUIRE_FLINK=1 (then tests fail rather than skip).
func Required() bool { return os.Getenv("STATEUTIL_REQUIRE_FLINK") == "1" }

// Require skips t when the harness cannot run here, or fails it when
// STATEUTIL_REQUIRE_FLINK=1. It also skips under -short.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if Required() {
			t.Fatalf("%v (STATEUTIL_REQUIRE_FLINK=1)", err)
		}
		t.Skipf("%v; set STATEUTIL_REQUIRE_FLINK=1 to fail instead", err)
	}
	if testing.Short() && !Required() {
		t.Skip("real-Flink test skipped with -short")
	}
}

// Error is a failed harness run. Message is the harness's one-line summary:
// for a failed restore, Flink's root cause (e.g. "Max parallelism mismatch ...").
type Error struct {
	Version, Command string
	ExitCode         int
	Message          string
	Stderr           string
}

func (e *Error) Error() string {
	return fmt.Sprintf("flink %s %s (exit %d): %s", e.Version, e.Command, e.ExitCode, e.Message)
}

// Run runs `flink-harness.sh version command args...` and returns its stdout.
// Cancelling ctx kills the JVM too.
func Run(ctx context.Context, version, command string, args ...string) (string, error) {
	return run(ctx, version, "", command, args...)
}

// run is Run with more Flink settings ("key=value;..."), added to
// STATEUTIL_FLINK_CONF's.
func run(ctx context.Context, version, conf, command string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{Script(), version, command}, args...)...)
	if conf != "" {
		if c := os.Getenv("STATEUTIL_FLINK_CONF"); c != "" {
			conf += ";" + c
		}
		cmd.Env = append(os.Environ(), "STATEUTIL_FLINK_CONF="+conf)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		e := &Error{Version: version, Command: command, ExitCode: -1, Stderr: stderr.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			e.ExitCode = ee.ExitCode()
		}
		if ctx.Err() != nil {
			e.Message = "stopped: " + ctx.Err().Error()
		} else {
			e.Message = summary(stderr.String())
		}
		return stdout.String(), e
	}
	return stdout.String(), nil
}

// summary is the last "flink-harness: failed: " line, else the last line.
func summary(stderr string) string {
	var last, failed string
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		last = l
		if s, ok := strings.CutPrefix(l, "flink-harness: failed: "); ok {
			failed = s
		}
	}
	if failed != "" {
		return failed
	}
	return last
}

// SnapshotOptions describe one snapshot of a test job.
type SnapshotOptions struct {
	Job     string // basic, longkeys, tuplekeys, types, big, rowdata, orders
	Backend string // hashmap or rocksdb
	Kind    string // checkpoint, canonical or native
	// Incremental (RocksDB checkpoints only), snapshot compression, changelog state backend.
	Incremental, Compression, Changelog bool
	// ChangelogDir is where the changelog goes (default Dir/changelog; required when Dir is remote).
	ChangelogDir   string
	Parallelism    int   // 0: 2
	MaxParallelism int   // 0: 128
	Records        int64 // 0: 1000
	Keys           int64 // 0: the job's default
	Payload        int   // big job: bytes per record (0: 64)
	// Dir is where Flink writes (a local path or hdfs:// URI); required.
	Dir string
	// Dump is the dump's path (default Dir/dump.jsonl); NoDump writes none (benchmarks).
	Dump   string
	NoDump bool
	// Manifest, if set, gets the snapshot's manifest.json.
	Manifest string
}

// Snapshot runs the job until every record is in its state, takes one
// snapshot and returns the snapshot's path (the directory holding _metadata)
// and the dump's path (the job's own view of its state at that snapshot).
func Snapshot(ctx context.Context, version string, o SnapshotOptions) (dir, dump string, err error) {
	if o.Dir == "" {
		return "", "", errors.New("flinkharness: SnapshotOptions.Dir is required")
	}
	args := []string{"--job", o.Job, "--backend", o.Backend, "--kind", o.Kind, "--dir", o.Dir}
	args = appendCommon(args, o.Parallelism, o.Records)
	if o.MaxParallelism > 0 {
		args = append(args, "--max-parallelism", strconv.Itoa(o.MaxParallelism))
	}
	if o.Keys > 0 {
		args = append(args, "--keys", strconv.FormatInt(o.Keys, 10))
	}
	if o.Payload > 0 {
		args = append(args, "--payload", strconv.Itoa(o.Payload))
	}
	for flag, on := range map[string]bool{"--incremental": o.Incremental, "--compression": o.Compression, "--changelog": o.Changelog} {
		if on {
			args = append(args, flag)
		}
	}
	if !o.NoDump {
		dump = o.Dump
		if dump == "" {
			dump = filepath.Join(o.Dir, "dump.jsonl")
		}
		args = append(args, "--dump", dump)
	}
	if o.Manifest != "" {
		args = append(args, "--manifest", o.Manifest)
	}
	if o.ChangelogDir != "" {
		args = append(args, "--changelog-dir", o.ChangelogDir)
	}
	out, err := Run(ctx, version, "snapshot", args...)
	if err != nil {
		return "", "", err
	}
	return lastLine(out), dump, nil
}

func appendCommon(args []string, parallelism int, records int64) []string {
	if parallelism > 0 {
		args = append(args, "--parallelism", strconv.Itoa(parallelism))
	}
	if records > 0 {
		args = append(args, "--records", strconv.FormatInt(records, 10))
	}
	return args
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// RestoreOptions describe a restore of a snapshot in Flink.
type RestoreOptions struct {
	Job, Snapshot, Backend string
	Parallelism            int // 0: 2
	// MaxParallelism 0 leaves it unset (Flink takes the snapshot's); anything
	// else sets it explicitly, and Flink refuses a snapshot with another one.
	MaxParallelism   int
	Records          int64 // the snapshot's --records (jobs derive keys from it)
	Dump             string
	AllowNonRestored bool
	Changelog        bool
	// RenameUID "OLD=NEW" runs the job's operator OLD under uid NEW, and
	// the dump names it NEW.
	RenameUID string
	// RenameState "OLD=NEW" declares the job's keyed or operator state OLD
	// under the descriptor name NEW, and the dump names it NEW.
	RenameState string
	// PerState dumps a state that Flink fails to register or read as an
	// "error" line (its value Flink's root cause) rather than failing the
	// job; a job that fails all the same still leaves a dump, of an
	// "error" line (operator: its id) for each state whose serializer
	// snapshots Flink cannot restore.
	PerState bool
}

// RestoreDump starts the job from the snapshot in Flink, dumps every restored
// state (and every timer as it fires) and returns the dump's path. A restore
// Flink refuses returns an *Error whose Message is Flink's reason.
func RestoreDump(ctx context.Context, version string, o RestoreOptions) (string, error) {
	if o.Dump == "" {
		return "", errors.New("flinkharness: RestoreOptions.Dump is required")
	}
	args := []string{"--job", o.Job, "--snapshot", o.Snapshot, "--backend", o.Backend, "--dump", o.Dump}
	args = appendCommon(args, o.Parallelism, o.Records)
	if o.MaxParallelism > 0 {
		args = append(args, "--max-parallelism", strconv.Itoa(o.MaxParallelism))
	}
	if o.AllowNonRestored {
		args = append(args, "--allow-non-restored")
	}
	if o.Changelog {
		args = append(args, "--changelog")
	}
	if o.RenameUID != "" {
		args = append(args, "--rename-uid", o.RenameUID)
	}
	if o.RenameState != "" {
		args = append(args, "--rename-state", o.RenameState)
	}
	if o.PerState {
		args = append(args, "--per-state")
	}
	_, err := Run(ctx, version, "restore-dump", args...)
	return o.Dump, err
}

// SPAOptions describe a read with the State Processor API.
type SPAOptions struct {
	Job, Snapshot, Dump string
	Records             int64
	// RenameUID "OLD=NEW" reads the job's operator OLD from uid NEW, and
	// the dump names it NEW.
	RenameUID string
	// WithoutOperator is a uid of the job not read (an operator the
	// snapshot no longer holds).
	WithoutOperator string
}

// SPADump reads the snapshot with Flink's State Processor API (hashmap
// backend) and returns the dump's path. Operator-state lines have subtask -1
// (the State Processor API does not tell which subtask held an element).
func SPADump(ctx context.Context, version string, o SPAOptions) (string, error) {
	if o.Dump == "" {
		return "", errors.New("flinkharness: SPAOptions.Dump is required")
	}
	args := appendCommon([]string{"--job", o.Job, "--snapshot", o.Snapshot, "--dump", o.Dump}, 0, o.Records)
	if o.RenameUID != "" {
		args = append(args, "--rename-uid", o.RenameUID)
	}
	if o.WithoutOperator != "" {
		args = append(args, "--without-operator", o.WithoutOperator)
	}
	_, err := Run(ctx, version, "spa-dump", args...)
	return o.Dump, err
}

// ContinueOptions describe a restore that goes on (the harness's continue).
type ContinueOptions struct {
	Job, Snapshot, Backend string
	Parallelism            int   // 0: 2
	Records                int64 // the snapshot's --records
	// ContinueTo is the record number the sources read on to.
	ContinueTo int64
	Out        string
	Changelog  bool
	// Conf is more Flink settings, "key=value;...".
	Conf string
}

// Continue restores the snapshot into the job itself and lets it read on to
// record ContinueTo; the job's outputs go to Out as a signed multiset, one
// JSON line each (testenv/flink/README.md). A restore Flink refuses returns
// an *Error whose Message is Flink's reason.
func Continue(ctx context.Context, version string, o ContinueOptions) (string, error) {
	if o.Out == "" || o.ContinueTo <= 0 {
		return "", errors.New("flinkharness: ContinueOptions.Out and ContinueTo are required")
	}
	args := []string{"--job", o.Job, "--snapshot", o.Snapshot, "--backend", o.Backend,
		"--continue-to", strconv.FormatInt(o.ContinueTo, 10), "--out", o.Out}
	args = appendCommon(args, o.Parallelism, o.Records)
	if o.Changelog {
		args = append(args, "--changelog")
	}
	_, err := run(ctx, version, o.Conf, "continue", args...)
	return o.Out, err
}

// InFlightBytes is how many bytes of records in flight the snapshot's
// channel state holds, as Flink's own channel state reader finds them (the
// harness's in-flight): 0 for an aligned snapshot, and for an unaligned
// checkpoint whose channels were all empty.
func InFlightBytes(ctx context.Context, version, snapshot string) (int64, error) {
	out, err := Run(ctx, version, "in-flight", "--snapshot", snapshot)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(lastLine(out), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("flinkharness: in-flight printed %q: %v", out, err)
	}
	return n, nil
}
