package sandbox_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seoetl/etl/sandbox"
)

// BenchmarkStreamLinks streams every link of a target of N backlinks (N =
// BENCH_SANDBOX_ROWS, default 1,000,000) as CSV from the sandbox over HTTP
// in the default order, and reports the sandbox's rows/s and the peak heap
// of the process (sandbox and client) sampled during the stream. Run it at
// two sizes to see the heap stay flat:
//
//	go test -run '^$' -bench StreamLinks -benchtime 1x ./sandbox/
//	BENCH_SANDBOX_ROWS=4000000 go test -run '^$' -bench StreamLinks -benchtime 1x ./sandbox/
func BenchmarkStreamLinks(b *testing.B) {
	rows := int64(1_000_000)
	if v := os.Getenv("BENCH_SANDBOX_ROWS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_SANDBOX_ROWS=%q: want a positive integer", v)
		}
		rows = n
	}
	s, err := sandbox.New(sandbox.Config{
		Now:           func() time.Time { return testNow },
		RatePerSecond: -1, MaxConcurrent: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	url := fmt.Sprintf("%s/apis/v4/backlinks/v1/links?url=n%d.example&scope=ROOT_DOMAIN&format=csv&limit=%d&key=%s",
		srv.URL, rows, rows, testKey)

	runtime.GC()
	peak := sampleHeap()
	var bytes int64
	start := time.Now()
	for b.Loop() {
		resp, err := srv.Client().Get(url)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		n, err := io.Copy(io.Discard, bufio.NewReaderSize(resp.Body, 64<<10))
		if err != nil {
			b.Fatal(err)
		}
		bytes = n
		resp.Body.Close()
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(rows)*float64(b.N)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(bytes)/float64(rows), "bytes/row")
}

// sampleHeap samples the live heap every millisecond until the returned
// function is called, which returns the peak.
func sampleHeap() func() uint64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var mu sync.Mutex
	var peak uint64
	read := func() {
		metrics.Read(samples)
		mu.Lock()
		peak = max(peak, samples[0].Value.Uint64())
		mu.Unlock()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		read()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
