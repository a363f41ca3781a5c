package sidecar

import (
	"errors"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/redact"
)

// TestListenAddr: every listening flag reads PORT (loopback), :PORT
// (every interface) and HOST:PORT alike, and refuses anything else with
// ErrListenAddr saying the forms.
func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		"9470": "127.0.0.1:9470", ":9470": ":9470", "127.0.0.1:9470": "127.0.0.1:9470", "0.0.0.0:9470": "0.0.0.0:9470",
		"[::1]:9470": "[::1]:9470", "localhost:0": "localhost:0", "0": "127.0.0.1:0", "pod.ns.svc:09470": "pod.ns.svc:9470",
	} {
		if got, err := ListenAddr(in); err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "host", "host:", ":", "70000", ":70000", "h:-1", "h:+1", "h:http", "::1", "a b:1", "1.2.3.4:5:6"} {
		if got, err := ListenAddr(in); !errors.Is(err, ErrListenAddr) {
			t.Errorf("ListenAddr(%q) = %q, %v; want ErrListenAddr", in, got, err)
		}
	}
	// The flag's port alone listens on loopback, as ListenTCP is given it.
	ln, err := ListenTCP("0", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := ListenTCP("localhost", false, nil); !errors.Is(err, ErrListenAddr) {
		t.Errorf("ListenTCP(\"localhost\"): %v; want ErrListenAddr", err)
	}
}

// TestListenAddrErrorQuotesNoPartApart: the refusal quotes the address
// given whole (which the redaction of a credential's shape then covers,
// password: x, a DSN), never its port or host apart, where a credential's
// tail would have no shape left to be told by.
func TestListenAddrErrorQuotesNoPartApart(t *testing.T) {
	const secret = "Lx7pSecretTail"
	for _, in := range []string{"password: " + secret, "postgres://u:" + secret + "@h"} {
		_, err := ListenAddr(in)
		if !errors.Is(err, ErrListenAddr) {
			t.Fatalf("ListenAddr(%q): %v; want ErrListenAddr", in, err)
		}
		if msg := redact.Error(err).Error(); strings.Contains(msg, secret[:6]) {
			t.Errorf("ListenAddr(%q), redacted: %s", in, msg)
		}
	}
}
