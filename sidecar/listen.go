package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotLoopback: ListenTCP was given an address other hosts can reach
// for an API without a token.
var ErrNotLoopback = errors.New("sidecar: address is not loopback")

// ErrListenAddr: a listening flag's value is not PORT, :PORT or
// HOST:PORT (ListenAddr).
var ErrListenAddr = errors.New("invalid listen address")

// ListenAddr is the one reading of every listening flag's value (serve
// --addr and --metrics-listen, reconcile --metrics-addr): PORT alone is
// that port on loopback (127.0.0.1), :PORT every interface (as Go and
// most servers read it), HOST:PORT that host; the port is 0 to 65535.
// Anything else is ErrListenAddr saying which forms there are.
func ListenAddr(s string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w %q: %s: give PORT (loopback, e.g. 9470), :PORT (every interface) or HOST:PORT (e.g. 127.0.0.1:9470, [::1]:9470)", ErrListenAddr, s, why)
	}
	if s == "" {
		return bad("empty")
	}
	if strings.Trim(s, "0123456789") == "" {
		s = net.JoinHostPort("127.0.0.1", s)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return bad("not host:port")
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || strings.Trim(port, "0123456789") != "" {
		return bad("the port is not a number from 0 to 65535")
	}
	if strings.ContainsAny(host, " \t/") {
		return bad("the host is not a host name or IP address")
	}
	return net.JoinHostPort(host, strconv.FormatUint(n, 10)), nil
}

// ListenTCP listens on addr (ListenAddr's forms). An address reachable from other hosts (not
// loopback, or a wildcard such as :9464 or 0.0.0.0) is refused with
// ErrNotLoopback unless authenticated says the Server has an
// Options.Token: without one, anyone who reaches the address could record
// coverage.
func ListenTCP(addr string, authenticated bool, logger *slog.Logger) (net.Listener, error) {
	addr, err := ListenAddr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sidecar: listen on %s: %w", addr, err)
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	if tcp != nil && tcp.IP.IsLoopback() {
		return ln, nil
	}
	if !authenticated {
		_ = ln.Close()
		return nil, fmt.Errorf("%w: %s (bound to %s) is reachable from other hosts and the record API would have no token: give --token-file (every request then needs it), or listen on 127.0.0.1", ErrNotLoopback, addr, ln.Addr())
	}
	if logger != nil {
		logger.Info("the record API listens on an address other hosts can reach; every request needs the bearer token", "addr", ln.Addr().String())
	}
	return ln, nil
}

// ListenUnix listens on a Unix socket at path with mode 0600 from the moment
// it appears there. A socket file
// left by a process that died is removed first, but only if nothing
// answers on it; any other file at path is an error, never removed.
func ListenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("sidecar: %s exists and is not a socket: remove it or choose another --socket path", path)
		}
		conn, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			_ = conn.Close()
			return nil, fmt.Errorf("sidecar: another process answers on %s: stop it or choose another --socket path", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("sidecar: socket %s exists and its state is unknown (%w): remove it if no process uses it", path, err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sidecar: removing the stale socket %s: %w", path, err)
		}
	}
	// The socket is bound in a directory only this user can enter, made
	// 0600 there, and then linked into place: bound at path directly, it
	// would take the umask's mode until a chmod, and a connection made in
	// between would outlive the chmod.
	dir, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return nil, fmt.Errorf("sidecar: making a private directory beside %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	private := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", private)
	if err != nil {
		return nil, fmt.Errorf("sidecar: listen on socket %s: %w", path, err)
	}
	uln := ln.(*net.UnixListener)
	uln.SetUnlinkOnClose(false) // it would unlink the private name, gone by then
	// Only this user may connect: the socket is the API's access control.
	if err := os.Chmod(private, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("sidecar: chmod 0600 %s: %w", private, err)
	}
	// A link, not a rename: a file that appeared at path meanwhile stays,
	// and the listen fails as binding at path would have.
	if err := os.Link(private, path); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("sidecar: placing the socket at %s: %w", path, err)
	}
	return &unixListener{UnixListener: uln, path: path}, nil
}

// unixListener removes its socket file when closed, as a listener bound at
// path itself would.
type unixListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { _ = os.Remove(l.path) })
	return err
}
