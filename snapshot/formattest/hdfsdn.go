package formattest

import "testing"

// DNHDFS is the test cluster of three DataNodes and replication 3 that
//
//	scripts/hdfs-start.sh --dn
//
// starts and describes in STATEUTIL_TEST_DN_* variables.
type DNHDFS struct {
	Addr    string // the NameNode's RPC address
	control string
}

// DNHDFSCluster returns the cluster of three DataNodes and sets the
// environment of a shell that reaches it as the superuser, without
// Kerberos. It skips t when no such cluster runs (fails it when HDFS is
// required).
func DNHDFSCluster(t testing.TB) DNHDFS {
	t.Helper()
	const start = "scripts/hdfs-start.sh --dn"
	d := DNHDFS{
		Addr:    needClusterEnv(t, "STATEUTIL_TEST_DN_HDFS", start),
		control: needClusterEnv(t, "STATEUTIL_TEST_DN_CONTROL", start),
	}
	t.Setenv("HADOOP_CONF_DIR", "")
	t.Setenv("HADOOP_HOME", "")
	t.Setenv("KRB5CCNAME", "")
	t.Setenv("KRB5_CONFIG", "")
	t.Setenv("HADOOP_USER_NAME", superuser(t))
	return d
}

// Dir makes a fresh directory for t on the cluster, removed when t ends,
// and returns it as an hdfs:// URI.
func (d DNHDFS) Dir(t testing.TB) string {
	t.Helper()
	return hdfsDir(t, d.Addr)
}

// Control sends a control command (stop-datanode random, start-datanode)
// and returns the answer after "ok"; it may be called from any goroutine.
func (d DNHDFS) Control(command string) (string, error) {
	return controlReply(d.control, command)
}
