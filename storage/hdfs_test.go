package storage_test

// These tests talk to a real HDFS: start one with
//
//	scripts/hdfs-start.sh && . .cache/hdfs.env
//
// which exports
//
//	STATEUTIL_TEST_HDFS            namenode address, 127.0.0.1:PORT
//	STATEUTIL_TEST_HDFS_CONTROL    harness control socket (stop/start the DataNode)
//	STATEUTIL_TEST_HDFS_SUPERUSER  the HDFS superuser (whoever started the harness)
//
// Without them the tests skip, except under CI=true or
// STATEUTIL_REQUIRE_HDFS=1, where they fail.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/storagetest"
)

func hdfsRequired() bool {
	ci := strings.ToLower(os.Getenv("CI"))
	return (ci != "" && ci != "false" && ci != "0") || os.Getenv("STATEUTIL_REQUIRE_HDFS") == "1"
}

// needEnv returns env var name or skips (fails in CI) when it is unset.
func needEnv(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := name + " is not set; start a test cluster with: scripts/hdfs-start.sh && . .cache/hdfs.env"
		if hdfsRequired() {
			t.Fatal(msg + " (HDFS tests are required under CI=true or STATEUTIL_REQUIRE_HDFS=1)")
		}
		t.Skip(msg)
	}
	return v
}

// plainEnv keeps a developer's Hadoop or Kerberos setup out of the tests.
func plainEnv(t *testing.T, user string) {
	t.Setenv("HADOOP_CONF_DIR", "")
	t.Setenv("HADOOP_HOME", "")
	t.Setenv("KRB5CCNAME", "")
	t.Setenv("KRB5_CONFIG", "")
	t.Setenv("HADOOP_USER_NAME", user)
}

func superuser(t *testing.T) string {
	if u := os.Getenv("STATEUTIL_TEST_HDFS_SUPERUSER"); u != "" {
		return u
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

func randSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// hdfsRoot resolves the test cluster and makes a fresh directory for t,
// removed afterwards.
func hdfsRoot(t *testing.T, addr string) (storage.Storage, string) {
	t.Helper()
	return hdfsRootIn(t, testStorage, addr)
}

// hdfsRootIn is hdfsRoot with the storages of reg.
func hdfsRootIn(t *testing.T, reg *storage.Registry, addr string) (storage.Storage, string) {
	t.Helper()
	ctx := context.Background()
	st, _, err := reg.Resolve(ctx, "hdfs://"+addr+"/")
	if err != nil {
		t.Fatal(err)
	}
	root := "/stateutil-test/" + unsafeChars.ReplaceAllString(t.Name(), "_") + "-" + randSuffix()
	if err := st.MkdirAll(ctx, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.RemoveAll(context.Background(), root); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return st, root
}

func TestHDFSConformance(t *testing.T) {
	addr := needEnv(t, "STATEUTIL_TEST_HDFS")
	plainEnv(t, superuser(t))
	storagetest.Run(t, func(t *testing.T) (storage.Storage, string) {
		return hdfsRoot(t, addr)
	})
}

// A closed loopback port stands in for a namenode that is down.
func TestHDFSNamenodeDown(t *testing.T) {
	plainEnv(t, "nobody")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	start := time.Now()
	_, _, err = testStorage.Resolve(context.Background(), "hdfs://"+addr+"/snapshots/1")
	took := time.Since(start)
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Resolve against a closed port = %v, want storage.ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "hdfs://"+addr) {
		t.Fatalf("error %q does not name the URI", err)
	}
	if took > 3*time.Second {
		t.Fatalf("took %v to report a refused connection", took)
	}
	t.Logf("error: %v (after %v)", err, took)
}

// A namenode that accepts connections but never answers must not hang us.
func TestHDFSNamenodeHung(t *testing.T) {
	plainEnv(t, "nobody")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	old := storage.HDFSIOTimeout
	storage.HDFSIOTimeout = 500 * time.Millisecond
	defer func() { storage.HDFSIOTimeout = old }()

	start := time.Now()
	_, _, err = testStorage.Resolve(context.Background(), "hdfs://"+ln.Addr().String()+"/")
	took := time.Since(start)
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Resolve against a silent server = %v, want storage.ErrUnavailable naming it", err)
	}
	if took > 5*time.Second {
		t.Fatalf("took %v with a 500ms I/O timeout", took)
	}
}

func TestHDFSNoNamenodeConfigured(t *testing.T) {
	plainEnv(t, "nobody")
	t.Setenv("HADOOP_CONF_DIR", t.TempDir())
	_, _, err := testStorage.Resolve(context.Background(), "hdfs:///x")
	if err == nil || !strings.Contains(err.Error(), "fs.defaultFS") {
		t.Fatalf("hdfs:///x without configuration = %v, want an error about fs.defaultFS", err)
	}
}

func TestHDFSKerberosConfigMissing(t *testing.T) {
	plainEnv(t, "nobody")
	t.Setenv("KRB5_CONFIG", filepath.Join(t.TempDir(), "no-krb5.conf"))
	_, _, err := testStorage.Resolve(context.Background(), "hdfs://127.0.0.1:1/x")
	if !errors.Is(err, storage.ErrPermission) || !strings.Contains(err.Error(), "no-krb5.conf") {
		t.Fatalf("Resolve with a missing krb5.conf = %v, want storage.ErrPermission naming the file", err)
	}
}

func TestHDFSDefaultFS(t *testing.T) {
	addr := needEnv(t, "STATEUTIL_TEST_HDFS")
	plainEnv(t, superuser(t))
	conf := t.TempDir()
	site := `<?xml version="1.0"?>
<configuration>
  <property><name>fs.defaultFS</name><value>hdfs://` + addr + `</value></property>
  <property><name>hadoop.security.authentication</name><value>simple</value></property>
</configuration>
`
	if err := os.WriteFile(filepath.Join(conf, "core-site.xml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HADOOP_CONF_DIR", conf)
	// Set, but the configuration says simple authentication.
	t.Setenv("KRB5CCNAME", "FILE:/nonexistent")

	ctx := context.Background()
	_, root := hdfsRoot(t, addr)
	st, p, err := testStorage.Resolve(ctx, "hdfs://"+root+"/f")
	if err != nil {
		t.Fatal(err)
	}
	if p != root+"/f" {
		t.Fatalf("path = %q", p)
	}
	if err := storage.WriteFile(ctx, st, p, []byte("via defaultFS")); err != nil {
		t.Fatal(err)
	}
	b, err := storage.ReadAll(ctx, st, p, 100)
	if err != nil || string(b) != "via defaultFS" {
		t.Fatalf("read back %q, %v", b, err)
	}
}

func TestHDFSNotFound(t *testing.T) {
	addr := needEnv(t, "STATEUTIL_TEST_HDFS")
	plainEnv(t, superuser(t))
	st, root := hdfsRoot(t, addr)
	missing := root + "/missing-checkpoint/_metadata"
	_, err := st.Open(context.Background(), missing)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Open of a missing file = %v, want storage.ErrNotFound", err)
	}
	if uri := "hdfs://" + addr + missing; !strings.Contains(err.Error(), uri) {
		t.Fatalf("error %q does not name %s", err, uri)
	}
	t.Logf("error: %v", err)
}

func TestHDFSPermissionDenied(t *testing.T) {
	addr := needEnv(t, "STATEUTIL_TEST_HDFS")
	su := superuser(t)
	plainEnv(t, su)
	ctx := context.Background()
	st, root := hdfsRoot(t, addr)
	private := root + "/private"
	if err := storage.WriteFile(ctx, st, root+"/public", []byte("p")); err != nil {
		t.Fatal(err)
	}
	if err := st.MkdirAll(ctx, private); err != nil {
		t.Fatal(err)
	}
	if err := storage.WriteFile(ctx, st, private+"/secret", []byte("s")); err != nil {
		t.Fatal(err)
	}
	// Storage has no chown; the superuser does it with the client itself.
	admin, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{addr}, User: su})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.Chown(private, "alice", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := admin.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}

	t.Setenv("HADOOP_USER_NAME", "bob")
	bob, _, err := testStorage.Resolve(ctx, "hdfs://"+addr+"/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Stat(ctx, root+"/public"); err != nil {
		t.Fatalf("bob cannot stat a public file: %v", err)
	}
	checks := map[string]error{}
	_, checks["Open"] = bob.Open(ctx, private+"/secret")
	_, checks["Stat"] = bob.Stat(ctx, private+"/secret")
	_, checks["List"] = bob.List(ctx, private)
	_, checks["Create"] = bob.Create(ctx, private+"/new")
	checks["Remove"] = bob.Remove(ctx, private+"/secret")
	for op, err := range checks {
		if !errors.Is(err, storage.ErrPermission) {
			t.Errorf("%s as bob = %v, want storage.ErrPermission", op, err)
			continue
		}
		if !strings.Contains(err.Error(), "hdfs://"+addr+private) {
			t.Errorf("%s error %q does not name the URI", op, err)
		}
	}
	t.Logf("error: %v", checks["Open"])
	// Still there for its owner.
	if _, err := st.Stat(ctx, private+"/secret"); err != nil {
		t.Fatal(err)
	}
}

// A client that held a connection to a NameNode that restarted (same port)
// finds it again: the first call after the restart reconnects rather than
// failing on the dead connection.
func TestHDFSNamenodeRestart(t *testing.T) {
	addr := needEnv(t, "STATEUTIL_TEST_HDFS")
	ctl := needEnv(t, "STATEUTIL_TEST_HDFS_CONTROL")
	plainEnv(t, superuser(t))
	ctx := context.Background()
	st, root := hdfsRoot(t, addr)
	p := root + "/f"
	if err := storage.WriteFile(ctx, st, p, []byte("before")); err != nil {
		t.Fatal(err)
	}
	control(t, ctl, "restart-namenode")
	if _, err := st.Stat(ctx, p); err != nil {
		t.Fatalf("stat after the NameNode restarted: %v", err)
	}
	if err := storage.WriteFile(ctx, st, p, []byte("after")); err != nil {
		t.Fatalf("write after the NameNode restarted: %v", err)
	}
	if b, err := storage.ReadAll(ctx, st, p, 100); err != nil || string(b) != "after" {
		t.Fatalf("read back %q, %v", b, err)
	}
}

// control sends one command to the harness, wants "ok ..." back, and
// returns that line.
func control(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("harness control %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(90 * time.Second))
	if _, err := c.Write([]byte(cmd + "\n")); err != nil {
		t.Fatalf("harness control %s: %v", cmd, err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ok") {
		t.Fatalf("harness control %s: %q, %v", cmd, line, err)
	}
	return strings.TrimSpace(line)
}

// dataNodeFaultSetup is the common start of the tests that stop the
// DataNode: a storage as the superuser, a fresh root, the harness control
// and namenode addresses, and an I/O timeout long enough to see the failure as an error.
func dataNodeFaultSetup(t *testing.T) (st storage.Storage, root, ctl, addr string) {
	t.Helper()
	addr = needEnv(t, "STATEUTIL_TEST_HDFS")
	ctl = needEnv(t, "STATEUTIL_TEST_HDFS_CONTROL")
	plainEnv(t, superuser(t))
	old := storage.HDFSIOTimeout
	storage.HDFSIOTimeout = 15 * time.Second
	t.Cleanup(func() { storage.HDFSIOTimeout = old })
	st, root = hdfsRoot(t, addr)
	return st, root, ctl, addr
}

func TestHDFSDataNodeStoppedDuringWrite(t *testing.T) {
	ctx := context.Background()
	st, root, ctl, addr := dataNodeFaultSetup(t)
	target := root + "/chk-1/_metadata"
	if err := st.MkdirAll(ctx, root+"/chk-1"); err != nil {
		t.Fatal(err)
	}

	chunk := make([]byte, 256<<10)
	rand.Read(chunk)
	w, err := st.Create(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := 0; i < 3; i++ {
		if _, err := w.Write(chunk); err != nil {
			t.Fatalf("write before the DataNode stopped: %v", err)
		}
	}

	control(t, ctl, "stop-datanode")
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			control(t, ctl, "start-datanode")
		}
	}
	defer restart()

	start := time.Now()
	var werr error
	// 4 MiB more crosses block boundaries (1 MiB blocks on the harness),
	// so the client must talk to the dead DataNode.
	for i := 0; i < 16 && werr == nil; i++ {
		_, werr = w.Write(chunk)
	}
	cerr := w.Commit()
	if cerr == nil {
		t.Fatalf("Commit succeeded with the DataNode stopped (write error: %v)", werr)
	}
	err = werr
	if err == nil {
		err = cerr
	}
	t.Logf("write error: %v; commit error: %v (after %v)", werr, cerr, time.Since(start))
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("error = %v, want storage.ErrUnavailable", err)
	}
	if uri := "hdfs://" + addr + target; !strings.Contains(err.Error(), uri) {
		t.Fatalf("error %q does not name %s", err, uri)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort after a failed Commit: %v", err)
	}

	restart()
	if _, err := st.Stat(ctx, target); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat of the target after a failed write = %v, want storage.ErrNotFound", err)
	}
	if infos, err := st.List(ctx, root+"/chk-1"); err != nil || len(infos) != 0 {
		t.Fatalf("List after a failed write = %+v, %v; want an empty dir (no temporary)", infos, err)
	}
	// The cluster is usable again for whatever runs next.
	if err := storage.WriteFile(ctx, st, target, chunk); err != nil {
		t.Fatalf("write after the DataNode restarted: %v", err)
	}
	if fi, err := st.Stat(ctx, target); err != nil || fi.Size != int64(len(chunk)) {
		t.Fatalf("Stat after restart = %+v, %v", fi, err)
	}
}

func TestHDFSDataNodeStoppedDuringRead(t *testing.T) {
	ctx := context.Background()
	st, root, ctl, addr := dataNodeFaultSetup(t)
	p := root + "/state"
	data := make([]byte, 3<<20)
	rand.Read(data)
	if err := storage.WriteFile(ctx, st, p, data); err != nil {
		t.Fatal(err)
	}
	f, err := st.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(make([]byte, 100), 0); err != nil {
		t.Fatal(err)
	}

	control(t, ctl, "stop-datanode")
	defer control(t, ctl, "start-datanode")
	// Another block, so the reader has to connect again.
	_, err = f.ReadAt(make([]byte, 100), 2<<20)
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("ReadAt with the DataNode stopped = %v, want storage.ErrUnavailable", err)
	}
	if uri := "hdfs://" + addr + p; !strings.Contains(err.Error(), uri) {
		t.Fatalf("error %q does not name %s", err, uri)
	}
	t.Logf("error: %v", err)
}

// testStorage knows local disk and HDFS.
var testStorage = func() *storage.Registry {
	r := storage.NewRegistry()
	r.Register("hdfs", storage.HDFSOpener(nil))
	return r
}()

// The CRC32C HDFS composes from the checksums its datanodes keep is the
// CRC32C of the file's bytes, for files of several blocks (the test
// cluster's are 1 MiB), one of exactly one block, and an empty one; the
// sizes too are the files'.
func TestHDFSCRC32C(t *testing.T) {
	addr := needEnv(t, "STATEUTIL_TEST_HDFS")
	plainEnv(t, superuser(t))
	st, root := hdfsRoot(t, addr)
	ctx := context.Background()
	c, ok := st.(storage.Checksummer)
	if !ok {
		t.Fatal("HDFS storage is no Checksummer")
	}
	for _, size := range []int{0, 1, 1 << 20, 3<<20 + 12345} {
		data := make([]byte, size)
		rand.Read(data)
		p := root + "/f" + strconv.Itoa(size)
		if err := storage.WriteFile(ctx, st, p, data); err != nil {
			t.Fatal(err)
		}
		n, crc, err := c.CRC32C(ctx, p)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if want := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)); n != int64(size) || crc != want {
			t.Fatalf("%d bytes: HDFS says %d bytes with crc32c %08x, the bytes are %d with %08x", size, n, crc, size, want)
		}
	}
	if _, _, err := c.CRC32C(ctx, root+"/missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("checksum of a missing file: %v", err)
	}
}

// The CRC32C of a 64 MiB file of 64 blocks on the test HDFS: asked of the
// datanodes (composed from the checksums they keep) against reading the
// file through, side by side (go test -bench HDFSCRC32C ./storage).
func BenchmarkHDFSCRC32C(b *testing.B) {
	addr := needEnv(b, "STATEUTIL_TEST_HDFS")
	b.Setenv("HADOOP_USER_NAME", os.Getenv("STATEUTIL_TEST_HDFS_SUPERUSER"))
	ctx := context.Background()
	st, _, err := testStorage.Resolve(ctx, "hdfs://"+addr+"/")
	if err != nil {
		b.Fatal(err)
	}
	p := "/stateutil-test/bench-crc32c-" + randSuffix()
	data := make([]byte, 64<<20)
	rand.Read(data)
	if err := storage.WriteFile(ctx, st, p, data); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Remove(context.Background(), p) })
	b.Run("checksum", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, _, err := st.(storage.Checksummer).CRC32C(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := storage.ReadAll(ctx, st, p, 1<<30); err != nil {
				b.Fatal(err)
			}
		}
	})
}
