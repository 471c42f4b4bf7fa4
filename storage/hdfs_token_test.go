package storage_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// tokenOnly is the environment of a YARN container: the credentials file
// in HADOOP_TOKEN_FILE_LOCATION, and no ticket and no keytab.
func tokenOnly(t *testing.T, file string) *storage.Registry {
	t.Helper()
	t.Setenv("HADOOP_TOKEN_FILE_LOCATION", file)
	t.Setenv("KRB5CCNAME", "FILE:"+filepath.Join(t.TempDir(), "no-such-cache"))
	reg := storage.NewRegistry()
	reg.Register("hdfs", storage.HDFSOpener(nil))
	return reg
}

// A delegation token that Hadoop's client obtained and wrote, in either
// version of the credentials file, logs in to the NameNode (over the
// cluster's RPC protection) where no ticket is: stateutil writes and reads.
func TestSecureHDFSDelegationToken(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	for _, format := range []string{"writable", "protobuf"} {
		t.Run(format, func(t *testing.T) {
			file, service := s.TokenFile(t, format, "")
			if service != s.Addr {
				t.Fatalf("Hadoop gave the token service %q, want the namenode's %s", service, s.Addr)
			}
			reg := tokenOnly(t, file)
			st, root := hdfsRootIn(t, reg, s.Addr)
			want := []byte("written with a delegation token, " + format)
			if got := writeAndRead(t, st, root+"/f", want); !bytes.Equal(got, want) {
				t.Fatalf("read back %q, wrote %q", got, want)
			}
		})
	}
}

// A credentials file without a token for this NameNode leaves the login
// as it was, as in Hadoop's clients (YARN gives every container a file,
// which on an open cluster holds only YARN's tokens): here alice's ticket.
func TestSecureHDFSTokenForAnotherNamenode(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	elsewhere, _ := s.TokenFile(t, "writable", "127.0.0.1:1")
	t.Setenv("HADOOP_TOKEN_FILE_LOCATION", elsewhere)
	reg := storage.NewRegistry()
	reg.Register("hdfs", storage.HDFSOpener(nil))
	st, root := hdfsRootIn(t, reg, s.Addr)
	want := []byte("written with the ticket beside another namenode's token")
	if got := writeAndRead(t, st, root+"/f", want); !bytes.Equal(got, want) {
		t.Fatalf("read back %q, wrote %q", got, want)
	}
}

// A token the NameNode cancelled, one for another NameNode (and no
// ticket) and a
// credentials file cut short each fail the connection with one line that
// names the cause.
func TestSecureHDFSDelegationTokenFailures(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)

	cancelled, _ := s.TokenFile(t, "protobuf", "")
	s.CancelTokens(t, cancelled)
	elsewhere, _ := s.TokenFile(t, "writable", "127.0.0.1:1")
	whole, _ := s.TokenFile(t, "writable", "")
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "short.token")
	if err := os.WriteFile(short, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, file string
		want       error
		naming     []string
	}{
		{"cancelled", cancelled, storage.ErrDelegationTokenRefused, []string{"alice", "HDFS_DELEGATION_TOKEN", cancelled, "can't be found"}},
		{"another namenode's", elsewhere, storage.ErrNoDelegationToken, []string{elsewhere, s.Addr, "127.0.0.1:1"}},
		{"cut short", short, storage.ErrNoDelegationToken, []string{short, "offset"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := tokenOnly(t, c.file)
			_, _, err := reg.Resolve(context.Background(), "hdfs://"+s.Addr+"/")
			if !errors.Is(err, c.want) || !errors.Is(err, storage.ErrPermission) {
				t.Fatalf("got %v, want %v (and storage.ErrPermission)", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			for _, n := range c.naming {
				if !strings.Contains(err.Error(), n) {
					t.Fatalf("error %q does not name %s", err, n)
				}
			}
			t.Logf("error: %v", err)
		})
	}
}

// wantTokenWire writes and reads a file as a container does, with a
// delegation token in place of a ticket, through the NameNode capture nn:
// the marker in its path is in what nn captured unless the level is
// privacy, so DIGEST-MD5 signs (integrity) or seals (privacy) each call
// as the cluster's hadoop.rpc.protection asks.
func wantTokenWire(t *testing.T, s formattest.SecureHDFS, nn *recorder, level string) {
	t.Helper()
	file, _ := s.TokenFile(t, "protobuf", nn.addr())
	reg := tokenOnly(t, file)
	// The client of a token is its own: its connection is made now.
	st, _, err := reg.Resolve(context.Background(), "hdfs://"+nn.addr()+"/")
	if err != nil {
		t.Fatal(err)
	}
	before := len(nn.captured())
	marker := "stateutil-token-marker-" + randSuffix() + randSuffix()
	dir := "/stateutil-test/" + marker
	if err := st.MkdirAll(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	defer st.RemoveAll(context.Background(), dir)
	want := []byte("written with a delegation token at " + level)
	if got := writeAndRead(t, st, dir+"/f", want); !bytes.Equal(got, want) {
		t.Fatalf("read back %q, wrote %q", got, want)
	}
	seen := nn.captured()[before:]
	if bytes.Contains(seen, []byte(marker)) != (level != "privacy") {
		t.Fatalf("%s with a token: marker in the NameNode capture (%d bytes) %v, want %v", level, len(seen), !(level != "privacy"), level != "privacy")
	}
	t.Logf("%s with a token: NameNode capture %d bytes", level, len(seen))
}
