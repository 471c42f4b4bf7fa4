package storage_test

// These tests talk to the highly available test cluster
// (formattest.HAHDFSCluster): start it with
//
//	scripts/hdfs-start.sh --ha && . <(grep STATEUTIL_TEST_HA_ .cache/hdfs-ha.env)

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// haConf writes a HADOOP_CONF_DIR whose nameservice ns has the namenodes
// addrs, in that order, and makes it the one in use.
func haConf(t *testing.T, ns string, addrs ...string) {
	t.Helper()
	dir := t.TempDir()
	var ids []string
	props := "<property><name>dfs.nameservices</name><value>" + ns + "</value></property>\n"
	for i, a := range addrs {
		id := fmt.Sprintf("nn%d", i+1)
		ids = append(ids, id)
		props += "<property><name>dfs.namenode.rpc-address." + ns + "." + id + "</name><value>" + a + "</value></property>\n"
	}
	props += "<property><name>dfs.ha.namenodes." + ns + "</name><value>" + strings.Join(ids, " , ") + "</value></property>\n"
	site := "<?xml version=\"1.0\"?>\n<configuration>\n" + props + "</configuration>\n"
	if err := os.WriteFile(filepath.Join(dir, "hdfs-site.xml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	core := "<?xml version=\"1.0\"?>\n<configuration><property><name>fs.defaultFS</name><value>hdfs://" + ns + "</value></property></configuration>\n"
	if err := os.WriteFile(filepath.Join(dir, "core-site.xml"), []byte(core), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HADOOP_CONF_DIR", dir)
}

// hdfs://NAMESERVICE and hdfs:/// (through fs.defaultFS) reach the
// nameservice's NameNodes, whichever of them is active.
func TestHAHDFSNameservice(t *testing.T) {
	c := formattest.HAHDFSCluster(t)
	ctx := context.Background()
	for _, uri := range []string{c.URI, "hdfs://"} {
		st, root := hdfsRoot(t, strings.TrimPrefix(uri, "hdfs://"))
		p := root + "/f"
		if err := storage.WriteFile(ctx, st, p, []byte(uri)); err != nil {
			t.Fatal(err)
		}
		if got := st.URI(p); got != uri+p {
			t.Fatalf("URI = %q, want %q", got, uri+p)
		}
		c.Do(t)
		if b, err := storage.ReadAll(ctx, st, p, 100); err != nil || string(b) != uri {
			t.Fatalf("%s: read back %q, %v after a failover", uri, b, err)
		}
	}
}

// A nameservice whose NameNodes the configuration does not say is refused,
// naming the setting that is missing.
func TestHAHDFSNameserviceIncomplete(t *testing.T) {
	plainEnv(t, "nobody")
	haConf(t, "ns", "127.0.0.1:1", "")
	_, _, err := testStorage.Resolve(context.Background(), "hdfs://ns/x")
	if err == nil || !strings.Contains(err.Error(), "dfs.namenode.rpc-address.ns.nn2") {
		t.Fatalf("Resolve of a nameservice without nn2's address = %v, want an error naming it", err)
	}
}

// A call that finds the standby NameNode first, and calls after each of
// several failovers back and forth, reach the active one.
func TestHAHDFSStandbyFailsOver(t *testing.T) {
	c := formattest.HAHDFSCluster(t)
	ctx := context.Background()
	active := c.Active(t)
	standby := c.Namenodes[0]
	if standby == active {
		standby = c.Namenodes[1]
	}
	haConf(t, "standby-first", standby, active)
	st, root := hdfsRoot(t, "standby-first")
	for i := range 6 {
		p := fmt.Sprintf("%s/f%d", root, i)
		if err := storage.WriteFile(ctx, st, p, []byte(p)); err != nil {
			t.Fatalf("write after %d failovers: %v", i, err)
		}
		if b, err := storage.ReadAll(ctx, st, p, 100); err != nil || string(b) != p {
			t.Fatalf("read after %d failovers: %q, %v", i, b, err)
		}
		c.Do(t)
	}
}

// A file of many blocks is written whole while the NameNodes fail over
// between its blocks, and while the active one dies; it is read whole while
// they fail over between its blocks.
func TestHAHDFSFailoverDuringBigFile(t *testing.T) {
	c := formattest.HAHDFSCluster(t)
	ctx := context.Background()
	st, root := hdfsRoot(t, c.NS())
	data := make([]byte, 12<<20) // 12 blocks of 1 MiB
	rand.Read(data)
	const mib, chunk = 1 << 20, 256 << 10
	t.Cleanup(func() { c.Do(t, "restart-namenode") })
	for _, tc := range []struct {
		name string
		at   map[int]string // MiB written → control command
	}{
		{"failover", map[int]string{1: "failover", 4: "failover", 7: "failover", 10: "failover"}},
		// The killed one comes back as standby and then takes over.
		{"dead-active", map[int]string{1: "kill-active", 5: "restart-namenode", 8: "failover"}},
	} {
		cmd := tc.name
		p := root + "/" + cmd
		w, err := st.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(data); off += chunk {
			if off%mib == 0 && tc.at[off/mib] != "" {
				c.Do(t, tc.at[off/mib])
			}
			if _, err := w.Write(data[off : off+chunk]); err != nil {
				t.Fatalf("%s: write at %d: %v", cmd, off, err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatalf("%s: commit: %v", cmd, err)
		}
		f, err := st.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(data))
		for off := 0; off < len(data); off += mib {
			c.Do(t)
			if _, err := io.ReadFull(f, got[off:off+mib]); err != nil {
				t.Fatalf("%s: read at %d: %v", cmd, off, err)
			}
		}
		f.Close()
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: read back bytes that differ from those written", cmd)
		}
	}
}

// Listings of a directory of many pages (the HA cluster's are 16 entries)
// are whole while the NameNodes fail over again and again.
func TestHAHDFSFailoverDuringList(t *testing.T) {
	c := formattest.HAHDFSCluster(t)
	ctx := context.Background()
	st, root := hdfsRoot(t, c.NS())
	const n = 100
	for i := range n {
		if err := st.MkdirAll(ctx, fmt.Sprintf("%s/d%03d", root, i)); err != nil {
			t.Fatal(err)
		}
	}
	// Listings in the background, failovers here (t.Fatal is for this goroutine).
	stop := make(chan struct{})
	type result struct {
		lists int
		err   error
	}
	done := make(chan result)
	go func() {
		lists := 0
		for {
			select {
			case <-stop:
				done <- result{lists, nil}
				return
			default:
			}
			infos, err := st.List(ctx, root)
			if err == nil && (len(infos) != n || infos[0].Name != "d000" || infos[n-1].Name != fmt.Sprintf("d%03d", n-1)) {
				err = fmt.Errorf("%d entries, want %d", len(infos), n)
			}
			if err != nil {
				done <- result{lists, err}
				return
			}
			lists++
		}
	}()
	const failovers = 20
	for range failovers {
		c.Do(t)
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	r := <-done
	if r.err != nil {
		t.Fatalf("listing %d: %v", r.lists, r.err)
	}
	t.Logf("%d listings of %d entries whole across %d failovers", r.lists, n, failovers)
}

// loseAnswer forwards loopback connections to target; the answer to the
// first request of method is lost instead: once the NameNode has sent it,
// then runs and the client's connection is cut, so the client cannot know
// whether the call was done.
func loseAnswer(t *testing.T, target, method string, then func()) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// The RPC request header's method name field: tag, length, name.
	marker := append([]byte{0x0a, byte(len(method))}, method...)
	var once sync.Once
	go func() {
		for {
			cl, err := ln.Accept()
			if err != nil {
				return
			}
			nn, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				cl.Close()
				continue
			}
			t.Cleanup(func() { cl.Close(); nn.Close() })
			asked := make(chan struct{}, 1)
			go func() {
				buf := make([]byte, 64<<10)
				for {
					k, err := cl.Read(buf)
					if k > 0 && bytes.Contains(buf[:k], marker) {
						select {
						case asked <- struct{}{}:
						default:
						}
					}
					if k > 0 {
						if _, err := nn.Write(buf[:k]); err != nil {
							return
						}
					}
					if err != nil {
						nn.Close()
						return
					}
				}
			}()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					k, err := nn.Read(buf)
					if k > 0 {
						select {
						case <-asked:
							// A client sends its next call after this one's answer.
							lost := false
							once.Do(func() { lost = true })
							if lost {
								then()
								cl.Close()
								nn.Close()
								return
							}
						default:
						}
						if _, err := cl.Write(buf[:k]); err != nil {
							return
						}
					}
					if err != nil {
						cl.Close()
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A claim's exclusive create, and a commit's rename, whose answer is lost
// as the NameNodes fail over, were done by the NameNode: the retry on the
// other one must take them as this writer's own (the claim is held, the
// file committed), not as another writer's claim or a missing file.
func TestHAHDFSLostAnswerAcrossFailover(t *testing.T) {
	for _, tc := range []struct{ method, op string }{{"create", "claim"}, {"rename2", "commit"}} {
		t.Run(tc.op, func(t *testing.T) {
			c := formattest.HAHDFSCluster(t)
			ctx := context.Background()
			_, root := hdfsRoot(t, c.NS())
			active := c.Active(t)
			standby := c.Namenodes[0]
			if standby == active {
				standby = c.Namenodes[1]
			}
			proxy := loseAnswer(t, active, tc.method, func() { c.Do(t) })
			haConf(t, "lossy-"+tc.op, proxy, standby)
			st, _, err := testStorage.Resolve(ctx, "hdfs://lossy-"+tc.op+"/")
			if err != nil {
				t.Fatal(err)
			}
			p := root + "/chk-1"
			switch tc.op {
			case "claim":
				cl, err := st.Claim(ctx, p)
				if err != nil {
					t.Fatalf("claim whose create's answer was lost: %v", err)
				}
				// Another writer (another client, through the cluster's own
				// configuration) finds it held.
				t.Setenv("HADOOP_CONF_DIR", c.Conf)
				other, _, err := testStorage.Resolve(ctx, c.URI+"/")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := other.Claim(ctx, p); !errors.Is(err, storage.ErrInUse) {
					t.Fatalf("another writer's claim while it is held = %v, want storage.ErrInUse", err)
				}
				if err := cl.Release(); err != nil {
					t.Fatal(err)
				}
			case "commit":
				if err := storage.WriteFile(ctx, st, p, []byte("whole")); err != nil {
					t.Fatalf("commit whose rename's answer was lost: %v", err)
				}
				if b, err := storage.ReadAll(ctx, st, p, 100); err != nil || string(b) != "whole" {
					t.Fatalf("read back %q, %v", b, err)
				}
			}
		})
	}
}
