package postgres

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

// cutProxy is a TCP proxy to the test server that, once armed, lets the
// next statement whose text holds a marker through to the server, waits
// for the server's answer to it to begin with ReadyForQuery (so the
// statement ran and, outside a transaction, committed), drops that answer
// and closes the client's connection: an answer lost on the way back.
// The pool it gives sends a statement's text with every execution
// (QueryExecModeExec) and no TLS, so the proxy can see the marker.
type cutProxy struct {
	ln     net.Listener
	server string
	marker []byte
	armed  atomic.Bool
	cuts   atomic.Int64
	wg     sync.WaitGroup
}

func newCutProxy(t *testing.T, marker string) (*cutProxy, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, server: net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))), marker: []byte(marker)}
	p.wg.Go(p.serve)
	addr := ln.Addr().(*net.TCPAddr)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", uint16(addr.Port)
	cfg.ConnConfig.TLSConfig, cfg.ConnConfig.Fallbacks = nil, nil
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		_ = ln.Close()
		p.wg.Wait()
	})
	return p, pool
}

func (p *cutProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.server)
		if err != nil {
			_ = client.Close()
			continue
		}
		var cutting atomic.Bool
		closeBoth := func() { _ = client.Close(); _ = server.Close() }
		p.wg.Go(func() { // client to server
			defer closeBoth()
			buf := make([]byte, 64<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 {
					if bytes.Contains(buf[:n], p.marker) && p.armed.CompareAndSwap(true, false) {
						cutting.Store(true)
					}
					if _, werr := server.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
		p.wg.Go(func() { // server to client
			defer closeBoth()
			buf := make([]byte, 64<<10)
			var held []byte
			for {
				n, err := server.Read(buf)
				if n > 0 {
					if cutting.Load() {
						// ReadyForQuery: 'Z', length 5, a status byte.
						if held = append(held, buf[:n]...); bytes.Contains(held, []byte("Z\x00\x00\x00\x05")) {
							p.cuts.Add(1)
							return
						}
						continue
					}
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}
