package reconcile

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsHandler serves m's metrics (GET /metrics) and nothing else; with
// a token, only to a request giving Authorization: Bearer token.
func MetricsHandler(m *Metrics, token string) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
			http.Error(w, "give the bearer token as Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		metrics.ServeHTTP(w, r)
	})
	return mux
}

// MetricsAddr is addr with a port alone (9465 or :9465) bound to loopback,
// where Go would listen on every interface: a scrape endpoint is reached
// from another host only when the address says so.
func MetricsAddr(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	if _, err := strconv.ParseUint(addr, 10, 16); err == nil {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	return addr
}
