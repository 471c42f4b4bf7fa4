package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
)

// --keytab and --principal log in where no credential cache is; without
// them the same command has no ticket.
func TestSecureHDFSKeytabFlags(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	loc := s.Dir(t) + "/job/chk-1"
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-such-cache"))
	login := []string{"--keytab", s.Keytab, "--principal", s.Principal}
	mustRun(t, append([]string{"generate", "--format", "filesystem", "--keys", "500", "--output", loc}, login...)...)
	if out := mustRun(t, append([]string{"verify", loc}, login...)...); !strings.Contains(out, "OK: no problems found") {
		t.Fatalf("verify with a keytab login:\n%s", out)
	}
	code, _, errOut := run(t, "verify", loc)
	wantKerberosExit(t, code, errOut, ExitNoTicket, "no-such-cache")
}

func wantKerberosExit(t *testing.T, code int, errOut string, want int, naming string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit %d, want %d: %s", code, want, errOut)
	}
	if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "stateutil: ") || !strings.Contains(errOut, naming) {
		t.Fatalf("stderr %q: want one line naming %s", errOut, naming)
	}
	t.Logf("exit %d: %s", code, strings.TrimSpace(errOut))
}

// Each way the login fails has its own exit code and one line.
func TestSecureHDFSExitCodes(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	loc := s.Dir(t) + "/nothing"
	noCache := "FILE:" + filepath.Join(t.TempDir(), "no-such-cache")
	for _, c := range []struct {
		name   string
		env    map[string]string
		flags  []string
		want   int
		naming string
	}{
		{"missing ticket", map[string]string{"KRB5CCNAME": noCache}, nil, ExitNoTicket, "no-such-cache"},
		{"expired ticket", map[string]string{"KRB5CCNAME": "FILE:" + s.ExpiredCcache}, nil, ExitTicketExpired, "expired"},
		{"wrong namenode principal", map[string]string{"HADOOP_CONF_DIR": s.ConfWith(t, map[string]string{"dfs.namenode.kerberos.principal": "nn/_HOST@" + s.Realm})},
			nil, ExitPrincipal, "dfs.namenode.kerberos.principal"},
		{"KDC unreachable", map[string]string{"KRB5CCNAME": noCache, "KRB5_CONFIG": s.Krb5ConfWith(t, formattest.ClosedAddr(t))},
			[]string{"--keytab", s.Keytab, "--principal", s.Principal}, ExitKDCUnreachable, "KDC"},
		{"keytab without the principal", map[string]string{"KRB5CCNAME": noCache},
			[]string{"--keytab", s.Keytab, "--principal", "bob@" + s.Realm}, ExitNoKey, "bob@" + s.Realm},
		{"clock skew", map[string]string{"KRB5CCNAME": noCache, "KRB5_CONFIG": s.NoSkewKrb5Config},
			[]string{"--keytab", s.NoSkewKeytab, "--principal", s.NoSkewPrincipal}, ExitClockSkew, "clock"},
		{"keytab without a principal", map[string]string{"KRB5CCNAME": noCache},
			[]string{"--keytab", s.Keytab}, ExitUsage, "--principal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			code, _, errOut := run(t, append([]string{"inspect", loc}, c.flags...)...)
			wantKerberosExit(t, code, errOut, c.want, c.naming)
		})
	}
}

// With the credentials file of HADOOP_TOKEN_FILE_LOCATION and no ticket, as
// in a YARN container, commands write and read HDFS with its delegation
// token; a token the NameNode cancelled, and a file without a token for
// this NameNode, each fail with one line and an exit code of their own.
func TestSecureHDFSDelegationTokenCommands(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	loc := s.Dir(t) + "/job/chk-1"
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-such-cache"))
	valid, _ := s.TokenFile(t, "writable", "")
	t.Setenv("HADOOP_TOKEN_FILE_LOCATION", valid)
	mustRun(t, "generate", "--format", "filesystem", "--keys", "500", "--output", loc)
	if out := mustRun(t, "verify", loc); !strings.Contains(out, "OK: no problems found") {
		t.Fatalf("verify with a delegation token:\n%s", out)
	}

	cancelled, _ := s.TokenFile(t, "protobuf", "")
	s.CancelTokens(t, cancelled)
	elsewhere, _ := s.TokenFile(t, "protobuf", "127.0.0.1:1")
	for _, c := range []struct {
		name, file string
		want       int
		naming     string
	}{
		{"cancelled", cancelled, ExitTokenRefused, cancelled},
		{"another namenode's", elsewhere, ExitNoToken, "127.0.0.1:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("HADOOP_TOKEN_FILE_LOCATION", c.file)
			code, _, errOut := run(t, "verify", loc)
			wantKerberosExit(t, code, errOut, c.want, c.naming)
		})
	}
}

// fetch-token, logged in with alice's ticket, writes a credentials file
// that Hadoop reads as hers, renewable by the short name of the renewer's
// principal (the NameNode keeps that), for the NameNode's address; with
// that file and no ticket, commands read HDFS. Without a ticket there is
// no token to fetch.
func TestSecureHDFSFetchToken(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	loc := s.Dir(t) + "/job/chk-1"
	mustRun(t, "generate", "--format", "filesystem", "--keys", "300", "--output", loc)
	file := filepath.Join(t.TempDir(), "job.token")
	out := mustRun(t, "fetch-token", "hdfs://"+s.Addr+"/", "--renewer", "yarn/localhost@"+s.Realm, "--output", file)
	t.Logf("fetch-token: %s", strings.TrimSpace(out))
	want := "kind=HDFS_DELEGATION_TOKEN service=" + s.Addr + " owner=" + s.Principal + " renewer=yarn"
	if got := s.ReadTokens(t, file); got != want {
		t.Fatalf("Hadoop reads %q in the file, want %q", got, want)
	}

	// A credentials file in the environment does not stand in for the
	// Kerberos login the NameNode gives tokens to.
	t.Setenv("HADOOP_TOKEN_FILE_LOCATION", file)
	mustRun(t, "fetch-token", "hdfs://"+s.Addr+"/", "--renewer", "yarn", "--output", filepath.Join(t.TempDir(), "again.token"))

	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-such-cache"))
	if out := mustRun(t, "verify", loc); !strings.Contains(out, "OK: no problems found") {
		t.Fatalf("verify with the fetched token:\n%s", out)
	}

	t.Setenv("HADOOP_TOKEN_FILE_LOCATION", "")
	code, _, errOut := run(t, "fetch-token", "hdfs://"+s.Addr+"/", "--renewer", "yarn", "--output", filepath.Join(t.TempDir(), "none"))
	wantKerberosExit(t, code, errOut, ExitNoTicket, "no-such-cache")
}

// Without --renewer, fetch-token names the ResourceManager of
// yarn-site.xml, where Hadoop keeps yarn.resourcemanager.principal (the
// secured cluster's client configuration has yarn/HOST there).
func TestSecureHDFSFetchTokenRenewerFromYarnSite(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	file := filepath.Join(t.TempDir(), "job.token")
	mustRun(t, "fetch-token", "hdfs://"+s.Addr+"/", "--output", file)
	want := "kind=HDFS_DELEGATION_TOKEN service=" + s.Addr + " owner=" + s.Principal + " renewer=yarn"
	if got := s.ReadTokens(t, file); got != want {
		t.Fatalf("Hadoop reads %q in the file, want %q", got, want)
	}
}
