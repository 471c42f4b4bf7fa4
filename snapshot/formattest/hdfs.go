package formattest

// Helpers for tests against the HDFS test harness (testenv/hdfs):
//
//	scripts/hdfs-start.sh && . .cache/hdfs.env
//
// exports STATEUTIL_TEST_HDFS (namenode address) and
// STATEUTIL_TEST_HDFS_CONTROL (control socket). Without them HDFS tests
// skip, except under CI=true or STATEUTIL_REQUIRE_HDFS=1, where they fail
// (as storage/hdfs_test.go's).

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/user"
	"regexp"
	"strings"
	"testing"
	"time"
)

// HDFSRequired reports whether HDFS tests must run rather than skip.
func HDFSRequired() bool {
	ci := strings.ToLower(os.Getenv("CI"))
	return (ci != "" && ci != "false" && ci != "0") || os.Getenv("STATEUTIL_REQUIRE_HDFS") == "1"
}

// needEnv returns the variable or skips (fails when HDFS is required).
func needEnv(t testing.TB, name string) string {
	t.Helper()
	return needClusterEnv(t, name, "scripts/hdfs-start.sh && . .cache/hdfs.env")
}

// needClusterEnv is needEnv for the cluster that start starts.
func needClusterEnv(t testing.TB, name, start string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := name + " is not set; start a test cluster with: " + start
		if HDFSRequired() {
			t.Fatal(msg + " (HDFS tests are required under CI=true or STATEUTIL_REQUIRE_HDFS=1)")
		}
		t.Skip(msg)
	}
	return v
}

// HDFSAddr is the test namenode's address. It skips t when no cluster is
// configured (fails it when one is required), and keeps a developer's
// Hadoop and Kerberos setup out of the test.
func HDFSAddr(t testing.TB) string {
	t.Helper()
	addr := needEnv(t, "STATEUTIL_TEST_HDFS")
	t.Setenv("HADOOP_CONF_DIR", "")
	t.Setenv("HADOOP_HOME", "")
	t.Setenv("KRB5CCNAME", "")
	t.Setenv("KRB5_CONFIG", "")
	t.Setenv("HADOOP_USER_NAME", superuser(t))
	return addr
}

// superuser is the test clusters' HDFS superuser: whoever started them.
func superuser(t testing.TB) string {
	t.Helper()
	if su := os.Getenv("STATEUTIL_TEST_HDFS_SUPERUSER"); su != "" {
		return su
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// HDFSDir makes a fresh directory on the test cluster, removed when t
// ends, and returns it as an hdfs:// URI.
func HDFSDir(t testing.TB) string {
	t.Helper()
	return hdfsDir(t, HDFSAddr(t))
}

func hdfsDir(t testing.TB, addr string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	uri := "hdfs://" + addr + "/stateutil-test/" + name + "-" + hex.EncodeToString(b[:])
	st, p, err := Registry().Storage.Resolve(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MkdirAll(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.RemoveAll(ctx, p); err != nil {
			t.Errorf("cleanup of %s: %v", uri, err)
		}
	})
	return uri
}

// HDFSControl sends one command (stop-datanode, start-datanode, status)
// to the harness and fails t unless it answers "ok".
func HDFSControl(t testing.TB, command string) {
	t.Helper()
	control(t, needEnv(t, "STATEUTIL_TEST_HDFS_CONTROL"), command)
}

// control sends command to the harness control socket at addr and returns
// its answer after "ok", failing t on any other.
func control(t testing.TB, addr, command string) string {
	t.Helper()
	reply, err := controlReply(addr, command)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// controlReply is control for a goroutine other than the test's.
func controlReply(addr, command string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("harness control %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(180 * time.Second))
	if _, err := c.Write([]byte(command + "\n")); err != nil {
		return "", fmt.Errorf("harness control %s: %v", command, err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ok") {
		return "", fmt.Errorf("harness control %s: %q, %v", command, line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "ok")), nil
}
