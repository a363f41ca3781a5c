package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/covmirror/covmirror/mirror"
)

func runServe(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "serve", "[--addr 127.0.0.1:9464] [--interval 30s]")
	addr := fs.String("addr", "127.0.0.1:9464", "listen address for /metrics and /debug/coverage (loopback by default)")
	interval := fs.Duration("interval", 30*time.Second, "checkpoint interval")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *interval <= 0 {
		return usageError{errors.New("serve: --interval must be positive")}
	}
	// The Mirror logs each failed checkpoint (and its retries) to the
	// logger; the loop itself never stops on one.
	m, store, table, err := g.openMirror(ctx, mirror.Options{Interval: *interval})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collector())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/debug/coverage", store.Handler())
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		_ = m.Close()
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(g.stdout, "serving http://%s/metrics and http://%s/debug/coverage; checkpoint every %s\n", ln.Addr(), ln.Addr(), *interval)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	runErr := m.Run(ctx) // until SIGTERM
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.Join(runErr, srv.Shutdown(shutdownCtx), explainWriteFailure(shutdownCtx, table, m.Close()))
	if serr := <-serveErr; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
