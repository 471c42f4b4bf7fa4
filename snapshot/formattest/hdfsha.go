package formattest

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// HAHDFS is the highly available test cluster that
//
//	scripts/hdfs-start.sh --ha
//
// starts (two NameNodes of one nameservice) and describes in
// STATEUTIL_TEST_HA_* variables.
type HAHDFS struct {
	URI       string   // hdfs://NAMESERVICE
	Namenodes []string // the NameNodes' RPC addresses, in the configuration's order
	Conf      string   // a client's HADOOP_CONF_DIR, which defines the nameservice
	admin     string
}

// HAHDFSCluster returns the HA cluster and sets the environment of a shell
// that reaches it: HADOOP_CONF_DIR, and the superuser, without Kerberos. It
// skips t when no such cluster runs (fails it when HDFS is required).
func HAHDFSCluster(t testing.TB) HAHDFS {
	t.Helper()
	const start = "scripts/hdfs-start.sh --ha"
	need := func(name string) string { return needClusterEnv(t, "STATEUTIL_TEST_HA_"+name, start) }
	h := HAHDFS{
		URI:       need("HDFS"),
		Namenodes: strings.Split(need("NAMENODES"), ","),
		Conf:      need("CONF"),
		admin:     need("ADMIN"),
	}
	t.Setenv("HADOOP_CONF_DIR", h.Conf)
	t.Setenv("HADOOP_HOME", "")
	t.Setenv("KRB5CCNAME", "")
	t.Setenv("KRB5_CONFIG", "")
	t.Setenv("HADOOP_USER_NAME", superuser(t))
	return h
}

// Do runs the cluster's admin command: with no argument it makes the other
// NameNode active; with one, it sends that control command (kill-active,
// restart-namenode). It returns the address of the NameNode active after it.
func (h HAHDFS) Do(t testing.TB, command ...string) string {
	t.Helper()
	active, err := h.Admin(command...)
	if err != nil {
		t.Fatal(err)
	}
	return active
}

// Admin is Do for a goroutine other than the test's.
func (h HAHDFS) Admin(command ...string) (string, error) {
	out, err := exec.Command(h.admin, command...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %v: %v: %s", h.admin, command, err, out)
	}
	active, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "ok active=")
	if !ok {
		return "", fmt.Errorf("%s %v answered %q", h.admin, command, out)
	}
	return active, nil
}

// Active is the address of the active NameNode (found by failing over
// twice).
func (h HAHDFS) Active(t testing.TB) string {
	t.Helper()
	h.Do(t)
	return h.Do(t)
}

// NS is the nameservice, the authority of URI.
func (h HAHDFS) NS() string { return strings.TrimPrefix(h.URI, "hdfs://") }

// Dir makes a fresh directory for t on the nameservice, removed when t
// ends, and returns it as an hdfs://NAMESERVICE URI.
func (h HAHDFS) Dir(t testing.TB) string {
	t.Helper()
	return hdfsDir(t, h.NS())
}
