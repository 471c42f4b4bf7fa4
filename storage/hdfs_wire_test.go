package storage_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
)

// recorder is a TCP proxy in front of target that keeps a copy of every
// byte it passes, both ways: a capture of that traffic on loopback.
type recorder struct {
	ln     net.Listener
	mu     sync.Mutex
	seen   bytes.Buffer
	conns  []net.Conn
	closed bool
}

func record(t *testing.T, listen, target string) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("recording proxy on %s: %v", listen, err)
	}
	r := &recorder{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if !r.track(c, up) {
				return
			}
			go r.pipe(up, c)
			go r.pipe(c, up)
		}
	}()
	t.Cleanup(r.close)
	return r
}

func (r *recorder) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	r.conns = append(r.conns, cs...)
	return true
}

func (r *recorder) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			r.seen.Write(buf[:n])
			r.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

func (r *recorder) addr() string { return r.ln.Addr().String() }

func (r *recorder) captured() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.seen.Bytes())
}

func (r *recorder) close() {
	r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, c := range r.conns {
		c.Close()
	}
}

// At each protection level of the cluster (hadoop.rpc.protection and
// dfs.data.transfer.protection alike), a file is written and read through
// proxies that capture the NameNode and the DataNode traffic. A marker
// value is in the file's path (NameNode RPC) and in its bytes (DataNode
// transfer): under privacy neither capture holds it; under authentication
// and integrity, which sign but do not encrypt, both do, which shows the
// captures see the traffic. The same holds for a login with a delegation
// token in place of the ticket.
func TestSecureHDFSWireProtection(t *testing.T) {
	s := formattest.SecureHDFSCluster(t)
	// Leaves the cluster as it started. Clients this process made before
	// now hold connections to the cluster that went away.
	t.Cleanup(func() { s.Protect(t, s.Protection, s.Protection, false) })
	ctx := context.Background()
	for _, c := range []struct {
		level string
		aes   bool // the DataNode offers AES: privacy then encrypts with it, not RC4
	}{{"authentication", false}, {"integrity", false}, {"privacy", false}, {"privacy", true}} {
		level := c.level
		name := level
		if c.aes {
			name += "-aes"
		}
		t.Run(name, func(t *testing.T) {
			dn := s.Protect(t, level, level, c.aes)
			_, port, err := net.SplitHostPort(dn)
			if err != nil {
				t.Fatal(err)
			}
			dnCapture := record(t, net.JoinHostPort(formattest.SecureDatanodeName, port), dn)
			nnCapture := record(t, "127.0.0.1:0", s.Addr)
			t.Setenv("HADOOP_CONF_DIR", s.ConfWith(t, map[string]string{"dfs.client.use.datanode.hostname": "true"}))

			marker := "stateutil-wire-marker-" + randSuffix() + randSuffix()
			content := bytes.Repeat([]byte(marker+"\n"), 2000)
			st, _, err := testStorage.Resolve(ctx, "hdfs://"+nnCapture.addr()+"/")
			if err != nil {
				t.Fatal(err)
			}
			dir := "/stateutil-test/" + marker
			if err := st.MkdirAll(ctx, dir); err != nil {
				t.Fatal(err)
			}
			defer st.RemoveAll(ctx, dir)
			if got := writeAndRead(t, st, dir+"/state", content); !bytes.Equal(got, content) {
				t.Fatalf("read back %d bytes, not the %d written", len(got), len(content))
			}

			nn, dnb := nnCapture.captured(), dnCapture.captured()
			if len(dnb) < 2*len(content) {
				t.Fatalf("the DataNode capture holds %d bytes, less than the file written and read (2 x %d): the transfer went around it", len(dnb), len(content))
			}
			inNN, inDN := bytes.Contains(nn, []byte(marker)), bytes.Contains(dnb, []byte(marker))
			t.Logf("%s: NameNode capture %d bytes (marker: %v), DataNode capture %d bytes (marker: %v)", name, len(nn), inNN, len(dnb), inDN)
			want := level != "privacy"
			if inNN != want || inDN != want {
				t.Fatalf("%s: marker in the NameNode capture %v, in the DataNode capture %v; want %v in both", level, inNN, inDN, want)
			}
			wantTokenWire(t, s, nnCapture, level)
			if level == "integrity" {
				wantNoWriteBelowPrivacy(t, s, nnCapture.addr(), dir, dnCapture)
			}
		})
	}
}

// A client configured for privacy writes nothing to a DataNode that offers
// only integrity: the write fails rather than go out unencrypted.
func wantNoWriteBelowPrivacy(t *testing.T, s formattest.SecureHDFS, nn, dir string, dn *recorder) {
	t.Helper()
	t.Setenv("HADOOP_CONF_DIR", s.ConfWith(t, map[string]string{
		"dfs.client.use.datanode.hostname": "true",
		"dfs.data.transfer.protection":     "privacy",
	}))
	ctx := context.Background()
	st, _, err := testStorage.Resolve(ctx, "hdfs://"+nn+"/")
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Create(ctx, dir+"/refused")
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("must not leave unencrypted " + randSuffix())
	_, err = p.Write(secret)
	if err == nil {
		err = p.Commit()
	} else {
		p.Abort()
	}
	if err == nil {
		t.Fatal("a client that wants privacy wrote to a DataNode offering integrity")
	}
	if bytes.Contains(dn.captured(), secret) {
		t.Fatal("the refused write's bytes reached the DataNode")
	}
	t.Logf("privacy wanted, integrity offered: %v", err)
}
