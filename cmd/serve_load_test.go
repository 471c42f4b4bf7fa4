package cmd

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// 200 clients asking at once for 10 s get every answer right, and the
// server's heap stays bounded: state is read a page, a key or a cached
// view at a time, by a bounded number of requests at once.
func TestServeUnderLoadKeepsMemoryBounded(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	mustRun(t, "generate", "--format", "filesystem", "--keys", "5000", "--value-bytes", "500", "--parallelism", "2", "--output", a)
	mustRun(t, "rescale", a, "--parallelism", "3", "--output", b)
	hs := startServer(t, "", a, b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}}
	paths := func(r *rand.Rand) string {
		switch r.IntN(7) {
		case 0:
			return fmt.Sprintf("/api/snapshots/%d", r.IntN(2))
		case 1:
			return fmt.Sprintf("/api/snapshots/%d/key-groups", r.IntN(2))
		case 2:
			return fmt.Sprintf("/api/snapshots/%d/plan?parallelism=%d", r.IntN(2), 1+r.IntN(4))
		case 3:
			return "/api/diff?a=0&b=1"
		case 4:
			return fmt.Sprintf("/api/snapshots/%d/get?operator=word-counter&state=count&key=word-%d", r.IntN(2), r.IntN(5000))
		}
		return fmt.Sprintf("/api/snapshots/%d/entries?operator=word-counter&state=recent&limit=1000&after=%d.0", r.IntN(2), r.IntN(128))
	}
	// What earlier tests of this process left live is not this server's:
	// the bound is on the growth over it.
	runtime.GC()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	base := live[0].Value.Uint64()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		// The heap marked live by each collection: what the server holds,
		// not the garbage a collector starved of CPU has yet to sweep.
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	var requests, failures atomic.Int64
	var firstFailure sync.Once
	var clients sync.WaitGroup
	for i := range 200 {
		clients.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for time.Now().Before(deadline) {
				path := paths(r)
				res, err := client.Get(hs.URL + path)
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if err == nil && res.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", res.StatusCode)
					}
				}
				requests.Add(1)
				if err != nil {
					failures.Add(1)
					firstFailure.Do(func() { t.Errorf("GET %s: %v", path, err) })
				}
			}
		})
	}
	clients.Wait()
	close(stop)
	sampler.Wait()
	client.CloseIdleConnections()
	grown := peak.Load() - min(base, peak.Load())
	t.Logf("%d requests, %d failed, peak live heap %d MiB, %d MiB over the %d MiB live before", requests.Load(), failures.Load(), peak.Load()>>20, grown>>20, base>>20)
	if failures.Load() > 0 {
		t.Errorf("%d of %d requests failed", failures.Load(), requests.Load())
	}
	if requests.Load() < 200 {
		t.Errorf("only %d requests in 10 s", requests.Load())
	}
	// Each of the 200 clients may hold an answer in flight (a page of up
	// to 1000 of these 500-byte records, encoded), and a CPU-starved run
	// holds most of them at once; 384 MiB is that and the views cached,
	// far below what thousands of requests would leave if answers or
	// readers outlived them.
	const bound = 384 << 20
	if grown > bound {
		t.Errorf("live heap grew by %d MiB under load, more than %d MiB", grown>>20, bound>>20)
	}
}
