package storage_test

import (
	"bytes"
	"context"
	"io"
	"math/rand"
	"net"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/stateutil/stateutil/storage"
)

// A busy DataNode reports stored blocks to the NameNode late. Until it does,
// the NameNode refuses a file's next block and answers "not yet" when the
// file is completed, and the client must retry: asking again for the block,
// and naming the file's last block again when it completes the file. The
// harness holds the reports back; a loopback proxy in front of the NameNode
// sees the refusal go by, and only then are the reports let through, so each
// retry path is taken on every run.
func TestHDFSWritesWaitForLateBlockReports(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		// refusal is what the proxy waits for: the NameNode's answer that
		// makes the client retry.
		refusal func(p *rpcWatch) <-chan struct{}
	}{
		// 1.5 MiB on 1 MiB blocks: completing the file waits for block 1.
		{"complete", 3 << 19, func(p *rpcWatch) <-chan struct{} { return p.answered("\x0a\x08complete") }},
		// 2.5 MiB: block 3 waits for block 1.
		{"addBlock", 5 << 19, func(p *rpcWatch) <-chan struct{} {
			return p.replied("org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, root, ctl, addr := dataNodeFaultSetup(t)
			proxy := watchRPC(t, addr)
			refused := tc.refusal(proxy)
			viaProxy, _, err := testStorage.Resolve(context.Background(), "hdfs://"+proxy.addr+"/")
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, tc.size)
			rand.New(rand.NewSource(int64(tc.size))).Read(data)
			p := path.Join(root, "late-reports")

			control(t, ctl, "pause-block-reports")
			resumed := false
			t.Cleanup(func() {
				if !resumed {
					control(t, ctl, "resume-block-reports")
				}
			})
			done := make(chan error, 1)
			go func() { done <- storage.WriteFile(context.Background(), viaProxy, p, data) }()
			select {
			case <-refused:
			case err := <-done:
				t.Fatalf("the write ended before the NameNode refused it (%v)", err)
			}
			control(t, ctl, "resume-block-reports")
			resumed = true
			if err := <-done; err != nil {
				t.Fatalf("write with late block reports: %v", err)
			}
			got, err := storage.ReadAll(context.Background(), st, p, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(data))
			}
		})
	}
}

// rpcWatch forwards loopback connections to a NameNode and raises signals
// on markers in the bytes going by.
type rpcWatch struct {
	addr     string
	mu       sync.Mutex
	requests []marker // in what clients send
	replies  []marker // in what the NameNode sends back
}

type marker struct {
	text string
	// answer: the marker is a request, signalled once its answer is back.
	answer bool
	seen   bool
	ch     chan struct{}
}

func watchRPC(t *testing.T, target string) *rpcWatch {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &rpcWatch{addr: ln.Addr().String()}
	var pipes sync.WaitGroup
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		w.mu.Lock()
		for _, c := range open {
			c.Close()
		}
		w.mu.Unlock()
		pipes.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			w.mu.Lock()
			open = append(open, c, s)
			w.mu.Unlock()
			pipes.Add(2)
			go func() { defer pipes.Done(); w.pipe(s, c, &w.requests, nil); s.Close() }()
			go func() { defer pipes.Done(); w.pipe(c, s, &w.replies, &w.requests); c.Close() }()
		}
	}()
	return w
}

// answered signals when the first request holding text has had its answer.
func (w *rpcWatch) answered(text string) <-chan struct{} {
	return w.watch(&w.requests, marker{text: text, answer: true})
}

// replied signals when a reply holds text.
func (w *rpcWatch) replied(text string) <-chan struct{} {
	return w.watch(&w.replies, marker{text: text})
}

func (w *rpcWatch) watch(list *[]marker, m marker) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	m.ch = make(chan struct{})
	*list = append(*list, m)
	return m.ch
}

// pipe copies src to dst, matching the markers of list in the stream. A
// chunk of replies read once a request marker of answered has gone to the
// NameNode is that request's answer: the client sends its next request only
// after the previous answer, which was read before. A marker split across
// reads is found through the kept tail.
func (w *rpcWatch) pipe(dst io.Writer, src io.Reader, list, answered *[]marker) {
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		n, err := src.Read(buf)
		if n > 0 {
			window := append(tail, buf[:n]...)
			var signal []chan struct{}
			w.mu.Lock()
			for i := range *list {
				if m := &(*list)[i]; !m.seen && bytes.Contains(window, []byte(m.text)) {
					m.seen = true
					if !m.answer {
						signal = append(signal, m.ch)
					}
				}
			}
			if answered != nil {
				for i := range *answered {
					if m := &(*answered)[i]; m.answer && m.seen && m.ch != nil {
						signal = append(signal, m.ch)
						m.ch = nil
					}
				}
			}
			w.mu.Unlock()
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
			for _, ch := range signal {
				close(ch)
			}
			tail = append(tail[:0], window[max(0, len(window)-64):]...)
		}
		if err != nil {
			return
		}
	}
}
