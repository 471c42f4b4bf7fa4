package formattest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SecureHDFS is the kerberized test cluster that
//
//	scripts/hdfs-start.sh --secure
//
// starts (a MiniKdc beside it) and describes in STATEUTIL_TEST_SECURE_*
// variables. The user is alice of Realm.
type SecureHDFS struct {
	Addr          string // namenode address, 127.0.0.1:PORT
	Conf          string // a client's HADOOP_CONF_DIR (hdfs/_HOST@REALM for the namenode)
	Krb5Config    string // krb5.conf naming the KDC
	Ccache        string // credential cache holding a valid ticket of alice
	ExpiredCcache string // one whose ticket of alice has expired
	Keytab        string // alice's keytab
	Principal     string // alice@REALM
	Realm         string
	Service       string // the principal of the NameNode and DataNode, hdfs/HOST@REALM
	Datanode      string // the DataNode's transfer address, 127.0.0.1:PORT
	Protection    string // dfs.data.transfer.protection and hadoop.rpc.protection it started with
	// A second realm, whose KDC allows no clock skew at all: a login there
	// fails as one from a machine whose clock is off does.
	NoSkewKrb5Config, NoSkewKeytab, NoSkewPrincipal string
	control                                         string
}

// SecureDatanodeName is the name the secured cluster's DataNode gives
// itself: a client that connects by hostname reaches 127.0.0.2 at its
// transfer port, where a test can listen.
const SecureDatanodeName = "127.0.0.2"

// SecureHDFSCluster returns the kerberized cluster and sets the
// environment of a shell in which alice ran kinit: HADOOP_CONF_DIR,
// KRB5_CONFIG and KRB5CCNAME, with no keytab in STATEUTIL_KEYTAB. It skips t
// when no such cluster runs (fails it when HDFS is required).
func SecureHDFSCluster(t testing.TB) SecureHDFS {
	t.Helper()
	const start = "scripts/hdfs-start.sh --secure"
	need := func(name string) string { return needClusterEnv(t, "STATEUTIL_TEST_SECURE_"+name, start) }
	s := SecureHDFS{
		Addr:             need("HDFS"),
		Conf:             need("CONF"),
		Krb5Config:       need("KRB5_CONFIG"),
		Ccache:           need("CCACHE"),
		ExpiredCcache:    need("EXPIRED_CCACHE"),
		Keytab:           need("KEYTAB"),
		Principal:        need("PRINCIPAL"),
		Realm:            need("REALM"),
		Service:          need("SERVICE_PRINCIPAL"),
		Datanode:         need("DATANODE"),
		Protection:       need("PROTECTION"),
		NoSkewKrb5Config: need("NOSKEW_KRB5_CONFIG"),
		NoSkewKeytab:     need("NOSKEW_KEYTAB"),
		NoSkewPrincipal:  need("NOSKEW_PRINCIPAL"),
		control:          need("CONTROL"),
	}
	t.Setenv("HADOOP_CONF_DIR", s.Conf)
	t.Setenv("HADOOP_HOME", "")
	t.Setenv("KRB5_CONFIG", s.Krb5Config)
	t.Setenv("KRB5CCNAME", "FILE:"+s.Ccache)
	t.Setenv("HADOOP_USER_NAME", "")
	t.Setenv("STATEUTIL_KEYTAB", "")
	t.Setenv("STATEUTIL_PRINCIPAL", "")
	return s
}

// Protect restarts the cluster with dfs.data.transfer.protection and
// hadoop.rpc.protection at the levels given (same namenode address, a new
// DataNode transfer address, returned), and rewrites its client
// configuration to match. With aes the DataNode also offers AES
// (dfs.encrypt.data.transfer.cipher.suites) for privacy.
func (s SecureHDFS) Protect(t testing.TB, data, rpc string, aes bool) string {
	t.Helper()
	cmd := "protect " + data + " " + rpc
	if aes {
		cmd += " aes"
	}
	reply := control(t, s.control, cmd)
	for _, f := range strings.Fields(reply) {
		if v, ok := strings.CutPrefix(f, "datanode="); ok {
			return v
		}
	}
	t.Fatalf("harness protect: no datanode= in %q", reply)
	return ""
}

// Dir makes a fresh directory for t under the cluster's shared test root,
// removed when t ends, as alice, and returns it as an hdfs:// URI.
func (s SecureHDFS) Dir(t testing.TB) string {
	t.Helper()
	return hdfsDir(t, s.Addr)
}

// ConfWith is a copy of the cluster's client configuration with the given
// hdfs-site.xml properties replaced or added.
func (s SecureHDFS) ConfWith(t testing.TB, props map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	core, err := os.ReadFile(filepath.Join(s.Conf, "core-site.xml"))
	if err != nil {
		t.Fatal(err)
	}
	site, err := os.ReadFile(filepath.Join(s.Conf, "hdfs-site.xml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(site)
	for name, value := range props {
		prop := "<property><name>" + name + "</name><value>" + value + "</value></property>"
		if i := strings.Index(text, "<property><name>"+name+"</name>"); i >= 0 {
			end := i + strings.Index(text[i:], "</property>") + len("</property>")
			text = text[:i] + prop + text[end:]
		} else {
			text = strings.Replace(text, "</configuration>", "  "+prop+"\n</configuration>", 1)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "core-site.xml"), core, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hdfs-site.xml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Krb5ConfWith is a copy of the cluster's krb5.conf with its KDC at kdc.
func (s SecureHDFS) Krb5ConfWith(t testing.TB, kdc string) string {
	t.Helper()
	text, err := os.ReadFile(s.Krb5Config)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(text), "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.TrimSpace(k) == "kdc" {
			line = "    kdc = " + kdc
		}
		out = append(out, line)
	}
	p := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ClosedAddr is a loopback address nothing listens on.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TokenFile is a Hadoop credentials file, written by Hadoop's own client
// logged in as alice, holding a delegation token of the NameNode that
// "yarn" may renew, in format "writable" (version 0) or "protobuf"
// (version 1); under service when it is not empty, else under the one
// Hadoop gives it, which is returned.
func (s SecureHDFS) TokenFile(t testing.TB, format, service string) (path, tokenService string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), format+".token")
	cmd := "token " + format + " " + path
	if service != "" {
		cmd += " " + service
	}
	reply := control(t, s.control, cmd)
	tokenService, ok := strings.CutPrefix(reply, "service=")
	if !ok {
		t.Fatalf("harness token: %q", reply)
	}
	return path, tokenService
}

// CancelTokens has the NameNode cancel the tokens of the credentials file.
func (s SecureHDFS) CancelTokens(t testing.TB, path string) {
	t.Helper()
	if reply := control(t, s.control, "cancel-token "+path); reply != "cancelled" {
		t.Fatalf("harness cancel-token: %q", reply)
	}
}

// ReadTokens is what Hadoop's own client reads in a credentials file: per
// token "kind=K service=S owner=O renewer=R", the owner and renewer as
// the NameNode put them in the token's identifier.
func (s SecureHDFS) ReadTokens(t testing.TB, path string) string {
	t.Helper()
	return control(t, s.control, "read-token "+path)
}
