//go:build linux

// The peak RSS comes from wait4's rusage, in KiB on Linux (bytes on macOS):
// this file is Linux only.

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/internal/pgtest"
)

// BenchmarkRunLinksPeakRSS runs `etl run` as a user does, a built binary in
// its own process, loading every link of the sandbox target
// n<BENCH_ROWS>.example (default 1,000,000 links) in pages of BENCH_LIMIT
// rows (default 10,000) from `etl sandbox`, another process, into a fresh
// database. It reports the peak RSS of the `etl run` process (the bar is
// 300 MB whatever the number of rows), its rows/s and the MB/s of HTTP it
// read (counted by a proxy in front of the sandbox). It fails unless the run
// exits 0 and backlinks holds exactly BENCH_ROWS rows. One iteration loads
// all the rows, so the default -benchtime runs it once; B/op and allocs/op
// are this benchmark's own, not the run's. Run it at two sizes to see the
// memory stay flat (mind go test's 10-minute default -timeout):
//
//	go test ./cmd/etl -run '^$' -bench RunLinksPeakRSS -benchtime 1x
//	BENCH_ROWS=4000000 go test ./cmd/etl -run '^$' -bench RunLinksPeakRSS -benchtime 1x -timeout 1h
//	make bench BENCH=RunLinksPeakRSS BENCH_ROWS=4000000
func BenchmarkRunLinksPeakRSS(b *testing.B) {
	rows := benchEnvInt(b, "BENCH_ROWS", 1_000_000)
	limit := benchEnvInt(b, "BENCH_LIMIT", 10_000)
	const now = "2026-11-21T03:00:00Z"

	bin := filepath.Join(b.TempDir(), "etl")
	build := exec.Command(goTool(), "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building etl: %v\n%s", err, out)
	}
	sandboxURL := startSandbox(b, bin, now)
	apiURL, received := countingProxy(b, strings.TrimPrefix(sandboxURL, "http://"))
	jobs := filepath.Join(b.TempDir(), "jobs.yaml")
	spec := fmt.Sprintf("jobs:\n  - name: bench\n    targets: [{url: n%d.example, scope: ROOT_DOMAIN}]\n    endpoints: {links: {limit: %d}}\n", rows, limit)
	if err := os.WriteFile(jobs, []byte(spec), 0o600); err != nil {
		b.Fatal(err)
	}

	var peakKiB int64
	var took time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		dbURL := pgtest.NewDB(b) // dropped when the benchmark ends
		before := received.Load()
		run := exec.Command(bin, "--log-format", "json", "run", "--jobs", jobs, "--job", "bench", "--now", now)
		run.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "ETL_API_URL="+apiURL, "ETL_API_KEY=sandbox")
		var stdout, stderr strings.Builder
		run.Stdout, run.Stderr = &stdout, &stderr
		b.StartTimer()
		began := time.Now()
		err := run.Run()
		wall := time.Since(began)
		took += wall
		b.StopTimer()
		if err != nil {
			b.Fatalf("etl run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		rss := run.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
		peakKiB = max(peakKiB, rss)
		b.Logf("etl run: peak RSS %.1f MB, wall %s, CPU %s, %.1f MB of HTTP read\n%s", float64(rss)*1024/1e6,
			wall.Round(time.Millisecond), (run.ProcessState.UserTime() + run.ProcessState.SystemTime()).Round(time.Millisecond),
			float64(received.Load()-before)/1e6, stdout.String())
		if got := countBacklinks(b, dbURL); got != int64(rows) {
			b.Fatalf("backlinks holds %d rows, want %d\nstdout:\n%s", got, rows, stdout.String())
		}
		b.StartTimer()
	}
	b.StopTimer()
	secs := took.Seconds()
	b.ReportMetric(float64(peakKiB)*1024/1e6, "peak-RSS-MB")
	b.ReportMetric(float64(rows)*float64(b.N)/secs, "rows/s")
	b.ReportMetric(float64(received.Load())/1e6/secs, "MB/s")
}

func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// goTool is the go command that runs the tests ($GOROOT/bin/go), else the
// one on PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// startSandbox starts `etl sandbox` on a free port with the default limits
// (10 requests/s, 10 in flight, no unit balance) and returns its URL; it is
// interrupted when b ends.
func startSandbox(b *testing.B, bin, now string) string {
	b.Helper()
	cmd := exec.Command(bin, "--log-format", "json", "sandbox", "--addr", "127.0.0.1:0", "--now", now)
	logs, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	first, err := bufio.NewReader(logs).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatalf("etl sandbox: %v", err)
	}
	// Every request logs a line; warnings and errors are kept for the end.
	var mu sync.Mutex
	var warnings []string
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(logs)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line := sc.Text(); !strings.Contains(line, `"level":"INFO"`) {
				mu.Lock()
				if len(warnings) < 20 {
					warnings = append(warnings, line)
				}
				mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, logs) // past an overlong line
	}()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-drained
		if err := cmd.Wait(); err != nil {
			b.Errorf("etl sandbox: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, w := range warnings {
			b.Logf("etl sandbox: %s", w)
		}
	})
	const prefix = `"url":"`
	i := strings.Index(first, prefix)
	if !strings.Contains(first, `"msg":"sandbox listening"`) || i < 0 {
		b.Fatalf("etl sandbox: want the 'sandbox listening' line first, got %s", first)
	}
	url, _, _ := strings.Cut(first[i+len(prefix):], `"`)
	return url
}

// countingProxy forwards TCP connections to addr, counting the bytes that
// come back, and returns its URL; it stops when b ends.
func countingProxy(b *testing.B, addr string) (string, *atomic.Int64) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var received atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, open bool) {
		mu.Lock()
		defer mu.Unlock()
		if open {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				continue
			}
			track(client, true)
			track(server, true)
			wg.Go(func() {
				_, _ = io.Copy(server, client)
				_ = server.(*net.TCPConn).CloseWrite()
			})
			wg.Go(func() {
				_, _ = io.Copy(countingWriter{client, &received}, server)
				client.Close()
				server.Close()
				track(client, false)
				track(server, false)
			})
		}
	})
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String(), &received
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func countBacklinks(b *testing.B, dbURL string) int64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM backlinks").Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}
