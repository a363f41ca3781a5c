package sidecar

import "testing"

// A Host header's port is a port: "localhost:attacker.example" or
// "localhost:" names no port of this server, yet hostName takes the part
// before the last colon and admits it as localhost (net.SplitHostPort does
// not look at the port). No browser sends such a Host, so this is hygiene,
// but the guard's rule says "any port", not any text.
func TestHostWithANonNumericPortRefused(t *testing.T) {
	lp := newLivePod(t, nil)
	for _, host := range []string{"localhost:attacker.example", "127.0.0.1:x", "localhost:"} {
		if code, body, _ := lp.send(t, false, "GET", "/v1/gaps", "", "Host", host); code != 421 {
			t.Errorf("GET /v1/gaps with Host %q: %d %s; want 421", host, code, body)
		}
	}
}
