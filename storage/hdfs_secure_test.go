package storage_test

// Tests against the kerberized cluster that scripts/hdfs-start.sh --secure
// starts beside a MiniKdc (see snapshot/formattest.SecureHDFS).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/stateutil/stateutil/internal/kerberos"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/storagetest"
)

// Everything a storage does, as alice with the ticket of her credential
// cache, over RPC and data transfer at the cluster's protection.
func TestSecureHDFSConformance(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	storagetest.Run(t, func(t *testing.T) (storage.Storage, string) {
		return hdfsRoot(t, s.Addr)
	})
}

// secureRoundTrip writes a file through reg at the cluster and reads it back.
func secureRoundTrip(t *testing.T, reg *storage.Registry, addr string) {
	t.Helper()
	st, root := hdfsRootIn(t, reg, addr)
	want := []byte("written by a keytab login")
	if got := writeAndRead(t, st, root+"/f", want); !bytes.Equal(got, want) {
		t.Fatalf("read back %q, wrote %q", got, want)
	}
}

// writeAndRead commits data at p and returns what reading p gives.
func writeAndRead(t *testing.T, st storage.Storage, p string, data []byte) []byte {
	t.Helper()
	ctx := context.Background()
	w, err := st.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	f, err := st.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A keytab and principal log in without any credential cache: given as
// options (what --keytab and --principal fill in) or in STATEUTIL_KEYTAB
// and STATEUTIL_PRINCIPAL. Without them the same setup has no ticket.
func TestSecureHDFSKeytabLogin(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-such-cache"))

	t.Run("options", func(t *testing.T) {
		reg := storage.NewRegistry()
		reg.Register("hdfs", storage.HDFSOpener(&storage.HDFSOptions{
			Kerberos: kerberos.Login{Keytab: s.Keytab, Principal: s.Principal},
		}))
		secureRoundTrip(t, reg, s.Addr)
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("STATEUTIL_KEYTAB", s.Keytab)
		t.Setenv("STATEUTIL_PRINCIPAL", s.Principal)
		secureRoundTrip(t, testStorage, s.Addr)
	})
	t.Run("neither", func(t *testing.T) {
		_, _, err := testStorage.Resolve(context.Background(), "hdfs://"+s.Addr+"/")
		if !errors.Is(err, kerberos.ErrNoTicket) {
			t.Fatalf("no keytab and no credential cache: %v, want kerberos.ErrNoTicket", err)
		}
	})
}

// The NameNode's principal is dfs.namenode.kerberos.principal, with _HOST
// the canonical name of the address connected to (as Hadoop's clients
// have it), not the address as written: the cluster is reached at
// 127.0.0.1, and its principal names the host.
func TestSecureHDFSNamenodePrincipalFromConfig(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	service, realm, _ := strings.Cut(s.Service, "@")
	svc, host, _ := strings.Cut(service, "/")
	if host == "127.0.0.1" {
		t.Fatalf("the harness's principal %s names the address: the test needs a host name", s.Service)
	}
	for _, c := range []struct {
		principal string
		want      error
	}{
		{svc + "/_HOST@" + realm, nil},
		{s.Service, nil},
		{"nn/_HOST@" + realm, kerberos.ErrPrincipal},   // unknown to the KDC
		{"HTTP/_HOST@" + realm, kerberos.ErrPrincipal}, // known, but not the NameNode's key
	} {
		t.Run(c.principal, func(t *testing.T) {
			t.Setenv("HADOOP_CONF_DIR", s.ConfWith(t, map[string]string{"dfs.namenode.kerberos.principal": c.principal}))
			_, _, err := testStorage.Resolve(context.Background(), "hdfs://"+s.Addr+"/")
			if c.want == nil {
				if err != nil {
					t.Fatalf("dfs.namenode.kerberos.principal=%s: %v", c.principal, err)
				}
				return
			}
			wantOneLineKerberosError(t, err, c.want)
		})
	}
}

func wantOneLineKerberosError(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) || !errors.Is(err, storage.ErrPermission) {
		t.Fatalf("got %v, want %v (and storage.ErrPermission)", err, want)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error of more than one line: %q", err)
	}
	t.Logf("error: %v", err)
}

// Every way a login fails is one line naming its cause, wrapping the
// kerberos error for it, and comes back without a hang.
func TestSecureHDFSLoginFailures(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	noCache := "FILE:" + filepath.Join(t.TempDir(), "no-such-cache")

	expired, err := credentials.LoadCCache(s.ExpiredCcache)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range expired.GetEntries() {
		if !time.Now().After(c.EndTime) {
			t.Fatalf("%s holds a ticket valid until %v: not expired yet", s.ExpiredCcache, c.EndTime)
		}
	}

	// A keytab for a principal the KDC has never heard of.
	stranger := keytab.New()
	if err := stranger.AddEntry("mallory", s.Realm, "secret", time.Now(), 1, etypeID.AES128_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	strangerKeytab := filepath.Join(t.TempDir(), "mallory.keytab")
	b, err := stranger.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strangerKeytab, b, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name   string
		env    map[string]string
		login  kerberos.Login
		want   error
		naming string
	}{
		{"missing ticket", map[string]string{"KRB5CCNAME": noCache}, kerberos.Login{}, kerberos.ErrNoTicket, "no-such-cache"},
		{"expired ticket", map[string]string{"KRB5CCNAME": "FILE:" + s.ExpiredCcache}, kerberos.Login{}, kerberos.ErrTicketExpired, s.Principal},
		{"keytab without the principal", map[string]string{"KRB5CCNAME": noCache},
			kerberos.Login{Keytab: s.Keytab, Principal: "bob@" + s.Realm}, kerberos.ErrNoKey, s.Keytab},
		{"principal unknown to the KDC", map[string]string{"KRB5CCNAME": noCache},
			kerberos.Login{Keytab: strangerKeytab, Principal: "mallory@" + s.Realm}, kerberos.ErrPrincipal, "mallory"},
		{"KDC unreachable, keytab", map[string]string{"KRB5CCNAME": noCache, "KRB5_CONFIG": s.Krb5ConfWith(t, formattest.ClosedAddr(t))},
			kerberos.Login{Keytab: s.Keytab, Principal: s.Principal}, kerberos.ErrKDCUnreachable, "KDC"},
		{"clock skew", map[string]string{"KRB5CCNAME": noCache, "KRB5_CONFIG": s.NoSkewKrb5Config},
			kerberos.Login{Keytab: s.NoSkewKeytab, Principal: s.NoSkewPrincipal}, kerberos.ErrClockSkew, "clock"},
		{"KDC unreachable, credential cache", map[string]string{"KRB5_CONFIG": s.Krb5ConfWith(t, formattest.ClosedAddr(t))},
			kerberos.Login{}, kerberos.ErrKDCUnreachable, "KDC"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			reg := storage.NewRegistry()
			reg.Register("hdfs", storage.HDFSOpener(&storage.HDFSOptions{Kerberos: c.login}))
			done := make(chan error, 1)
			go func() {
				_, _, err := reg.Resolve(context.Background(), "hdfs://"+s.Addr+"/")
				done <- err
			}()
			select {
			case err := <-done:
				wantOneLineKerberosError(t, err, c.want)
				if !strings.Contains(err.Error(), c.naming) {
					t.Fatalf("error %q does not name %s", err, c.naming)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("no answer after two minutes: the login hangs")
			}
		})
	}
}
