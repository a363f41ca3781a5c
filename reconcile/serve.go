package reconcile

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/covmirror/covmirror/internal/redact"
)

// MetricsHandler serves m's metrics (GET /metrics) and nothing else; with
// a token, only to a request giving Authorization: Bearer token.
//
// A browser on the job's host can reach a loopback listener, so a page of
// another site is refused as the sidecar's guard refuses it: a request
// with an Origin other than the one its Host names, or that the browser
// marks Sec-Fetch-Site cross-site or same-site, is 403; and without a
// token (the listener is then loopback) a Host that is not localhost or
// an IP literal is 421, since DNS rebinding needs a name the attacker's
// DNS answers for. With a token any Host passes (Prometheus may scrape by
// a service's name): no page knows the token.
func MetricsHandler(m *Metrics, token string) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	want := sha256.Sum256([]byte(token))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if token == "" && !loopbackName(r.Host) {
			w.Header().Set("Connection", "close")
			http.Error(w, "the Host is not a name of this server: scrape it by localhost or an IP address", http.StatusMisdirectedRequest)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, "http://"+r.Host) {
			http.Error(w, "a page of another origin may not read the metrics", http.StatusForbidden)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			http.Error(w, "the browser says this request comes from another site", http.StatusForbidden)
			return
		}
		if token != "" {
			scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
			if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="covmirror"`)
				http.Error(w, "give the bearer token as Authorization: Bearer TOKEN", http.StatusUnauthorized)
				return
			}
		}
		metrics.ServeHTTP(w, r)
	})
	return mux
}

// MetricsServer serves MetricsHandler(m, token), bounded like the
// sidecar's server: a caller on the host holding idle or slow connections
// open must not exhaust the job's descriptors. What net/http logs (a
// handler's panic with its value, a connection's failure) goes to logger,
// redacted, never to the default log as it is.
func MetricsServer(m *Metrics, token string, logger *slog.Logger) *http.Server {
	srv := &http.Server{Handler: MetricsHandler(m, token), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10}
	srv.ErrorLog = redact.ErrorLog(logger, "reconcile: serving the metrics")
	return srv
}

// loopbackName reports whether a Host header names this server without a
// name an attacker's DNS could answer for: localhost, or an IP literal,
// with a valid port or none.
func loopbackName(hostport string) bool {
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return false
		}
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ".")
	return host == "localhost" || net.ParseIP(host) != nil
}
