//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The startup goals of the commands a pipeline may run once per batch.
const (
	startupCPUGoal = 30 * time.Millisecond
	startupRSSGoal = 40 << 20
)

// BenchmarkStartup builds covmirror, covmirror-lite (the same commands in a
// binary that links only the local tier) and, as the baseline, a Go
// program that only prints, in the same run; then runs each binary's
// `version`, `record` and `inspect` (on a fresh state directory) and the
// baseline, each b.N times, and reports the median CPU (user and system) and the largest
// peak RSS of each, beside the baseline's and the ratio. Each series runs
// twice: on the binaries as the linker left them in the page cache, and
// read back from disk (their cached pages dropped first), since a freshly
// linked binary may sit in the page cache in 2 MB folios, each counted
// whole in the RSS of a process that touches it (docs/scale.md):
//
//	go test ./cmd/covmirror -run '^$' -bench Startup -benchtime 20x
func BenchmarkStartup(b *testing.B) {
	bins, hello := startupBinaries(b)
	state := filepath.Join(b.TempDir(), "state")
	for _, form := range []struct {
		name  string
		evict bool
	}{{"as-linked", false}, {"from-disk", true}} {
		if form.evict {
			for _, bin := range bins {
				evict(b, bin.path)
			}
			evict(b, hello)
		}
		base := measure(b, b.N, hello)
		for _, bin := range bins {
			for _, c := range []struct {
				name string
				args []string
			}{
				{"version", []string{"version"}},
				{"record", []string{"--state", state, "record", "--sink", "lake", "--topic", "orders", "--partition", "0", "--range", "0:1"}},
				{"inspect", []string{"--state", state, "inspect"}},
			} {
				got := measure(b, b.N, bin.path, c.args...)
				b.Logf("%-9s %-14s %-7s CPU median %5.1f ms (hello %3.1f ms, ratio %4.1f; goal <= %s: %s)  peak RSS %5.1f MiB (hello %3.1f MiB, ratio %4.1f; goal <= %d MiB: %s)",
					form.name, bin.name, c.name, ms(got.cpu), ms(base.cpu), ratio(got.cpu, base.cpu), startupCPUGoal, met(got.cpu <= startupCPUGoal),
					mib(got.rss), mib(base.rss), float64(got.rss)/float64(base.rss), startupRSSGoal>>20, met(got.rss <= startupRSSGoal))
				b.ReportMetric(ms(got.cpu), form.name+"-"+bin.name+"-"+c.name+"-cpu-ms")
				b.ReportMetric(mib(got.rss), form.name+"-"+bin.name+"-"+c.name+"-rss-MiB")
			}
		}
		b.ReportMetric(ms(base.cpu), form.name+"-hello-cpu-ms")
		b.ReportMetric(mib(base.rss), form.name+"-hello-rss-MiB")
	}
}

// startupBin is one of the binaries BenchmarkStartup measures.
type startupBin struct{ name, path string }

var (
	startupOnce sync.Once
	startupDir  string // removed by TestMain
	startupBins []startupBin
	helloBin    string
	startupErr  error
)

// TestMain removes what BenchmarkStartup built.
func TestMain(m *testing.M) {
	code := m.Run()
	if startupDir != "" {
		_ = os.RemoveAll(startupDir)
	}
	os.Exit(code)
}

// startupBinaries builds covmirror, covmirror-lite and the baseline once
// per test binary (the benchmark runs with b.N = 1 first), into a
// directory TestMain removes.
func startupBinaries(b *testing.B) ([]startupBin, string) {
	startupOnce.Do(func() {
		dir, err := os.MkdirTemp("", "covmirror-startup-")
		if err != nil {
			startupErr = err
			return
		}
		startupDir = dir
		helloBin = filepath.Join(dir, "hello")
		for _, pkg := range []string{".", "../covmirror-lite"} {
			bin := startupBin{name: filepath.Base(filepath.Join("cmd/covmirror", pkg))}
			bin.path = filepath.Join(dir, bin.name)
			if out, err := exec.Command("go", "build", "-o", bin.path, pkg).CombinedOutput(); err != nil {
				startupErr = fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
				return
			}
			startupBins = append(startupBins, bin)
		}
		src := filepath.Join(dir, "hello-src")
		if err := os.MkdirAll(src, 0o755); err != nil {
			startupErr = err
			return
		}
		if err := errors.Join(os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644),
			os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644)); err != nil {
			startupErr = err
			return
		}
		build := exec.Command("go", "build", "-o", helloBin, ".")
		build.Dir = src
		build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		if out, err := build.CombinedOutput(); err != nil {
			startupErr = fmt.Errorf("go build of the baseline: %w\n%s", err, out)
		}
	})
	if startupErr != nil {
		b.Fatal(startupErr)
	}
	return startupBins, helloBin
}

// evict drops path's pages from the page cache, so that the next run reads
// it from disk as after a reboot.
func evict(b *testing.B, path string) {
	b.Helper()
	f, err := os.Open(path)
	must(b, err)
	defer func() { _ = f.Close() }()
	must(b, f.Sync())
	must(b, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
}

type startup struct {
	cpu time.Duration // median user+system
	rss int64         // largest peak, bytes
}

// measure runs bin with args n times and returns its median CPU and
// largest peak RSS. The peak comes from /usr/bin/time: a child this
// process starts inherits this process's own peak at exec (Linux carries
// the high-water mark of the memory it leaves into the process's maximum),
// and /usr/bin/time forks its child from a process of a few MiB. The CPU is
// /usr/bin/time's with the child it waited for, which the baseline pays
// alike.
func measure(b *testing.B, n int, bin string, args ...string) startup {
	b.Helper()
	const timeBin = "/usr/bin/time"
	if _, err := os.Stat(timeBin); err != nil {
		b.Skipf("%s (GNU time) is needed for the children's peak RSS: %v", timeBin, err)
	}
	out := filepath.Join(b.TempDir(), "rss")
	cpus := make([]time.Duration, 0, n)
	var rss int64
	for range n {
		cmd := exec.Command(timeBin, append([]string{"-f", "%M", "-o", out, bin}, args...)...)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %v: %v", bin, args, err)
		}
		cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		data, err := os.ReadFile(out)
		must(b, err)
		kib, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			b.Fatalf("%s -f %%M wrote %q: %v", timeBin, data, err)
		}
		rss = max(rss, kib<<10)
	}
	slices.Sort(cpus)
	return startup{cpu: cpus[len(cpus)/2], rss: rss}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(n int64) float64        { return float64(n) / (1 << 20) }

// ratio is a/b, with b at least the kernel's CPU accounting tick, so that
// a baseline measured as zero gives a finite ratio.
func ratio(a, b time.Duration) float64 { return float64(a) / float64(max(b, time.Millisecond)) }

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
