package sidecar

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// The guard stands in front of everything the Server serves on TCP: its
// own routes, Options.Extra (the coverage map, /metrics, /debug/coverage)
// and the JSON 404. A browser on the pod's host (an operator's, opened on
// the coverage map through kubectl port-forward) can reach a loopback
// listener, so nothing a page of another origin can send may write, and
// nothing it can read may answer:
//
//   - host: the Host header must name this server: localhost, an IP
//     literal (any: DNS rebinding needs a name the attacker's DNS answers
//     for, and an IP literal is never one), or a name in AllowedHosts; any
//     port, since a port-forward maps another local port. 421 otherwise.
//   - origin: an Origin header must be this server's own origin
//     (http://HOST as the request names it), on every method; and a
//     request the browser marks Sec-Fetch-Site cross-site or same-site is
//     refused unless it is a GET or HEAD navigation (a link to the map). 403.
//   - token: with Options.Token, "Authorization: Bearer TOKEN" on every
//     route but the GET and HEAD of Options.PublicPaths. 401.
//   - content-type: a write (any method but GET and HEAD) must say
//     application/json or application/x-ndjson, which no page can send to
//     another origin without a CORS preflight (and the API answers none).
//     415.
//
// A connection over the Unix socket passes untouched: its mode 0600 admits
// the serving user alone, and no browser can open a socket file.

// socketKey marks a request that came over a Unix socket.
type socketKey struct{}

// connContext marks connections accepted on a Unix socket listener.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if _, ok := c.LocalAddr().(*net.UnixAddr); ok {
		return context.WithValue(ctx, socketKey{}, true)
	}
	return ctx
}

// guard wraps h; mux names the route a refused request was meant for.
func (s *Server) guard(h http.Handler, mux *http.ServeMux, labels map[string]string) http.Handler {
	var token [sha256.Size]byte
	if s.opts.Token != "" {
		token = sha256.Sum256([]byte(s.opts.Token))
	}
	allowed := map[string]bool{"localhost": true}
	for _, name := range s.opts.AllowedHosts {
		allowed[normalHost(name)] = true
	}
	public := map[string]bool{}
	for _, p := range s.opts.PublicPaths {
		public[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(socketKey{}) != nil {
			h.ServeHTTP(w, r)
			return
		}
		code, e := s.check(r, allowed, public, token)
		if code == 0 {
			h.ServeHTTP(w, r)
			return
		}
		_, pattern := mux.Handler(r)
		route := routeLabel(labels, pattern, r.Method)
		r = r.WithContext(context.WithValue(r.Context(), routeKey{}, route))
		switch code {
		case http.StatusUnauthorized:
			w.Header().Set("WWW-Authenticate", `Bearer realm="covmirror"`)
		case http.StatusMisdirectedRequest:
			w.Header().Set("Connection", "close")
		}
		s.fail(w, r, code, e)
		s.counters.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	})
}

// check applies the rules in order; code 0 admits the request.
func (s *Server) check(r *http.Request, allowed, public map[string]bool, token [sha256.Size]byte) (int, apiError) {
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	host := hostName(r.Host)
	if host == "" || !allowed[host] && net.ParseIP(host) == nil {
		return http.StatusMisdirectedRequest, apiError{Rule: "host", Error: fmt.Sprintf("Host %q is not a name of this server: use localhost or an IP address, or start serve with --allow-host NAME for a name it is reached by", truncate(r.Host))}
	}
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, "http://"+r.Host) {
		return http.StatusForbidden, apiError{Rule: "origin", Error: fmt.Sprintf("Origin %q is not this server's (http://%s): the API answers only its own pages and programs that send no Origin", truncate(o), truncate(r.Host))}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); (site == "cross-site" || site == "same-site") && (write || r.Header.Get("Sec-Fetch-Mode") != "navigate") {
		return http.StatusForbidden, apiError{Rule: "origin", Error: "the browser says this request comes from another site (Sec-Fetch-Site: " + site + "): the API answers only its own pages"}
	}
	if s.opts.Token != "" && !(public[r.URL.Path] && !write) {
		if !validBearer(r.Header.Get("Authorization"), token) {
			return http.StatusUnauthorized, apiError{Rule: "token", Error: "this server needs \"Authorization: Bearer TOKEN\" with the token of its --token-file"}
		}
	}
	if write {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" && mt != "application/x-ndjson" && mt != "application/jsonl" {
			return http.StatusUnsupportedMediaType, apiError{Rule: "content-type", Error: fmt.Sprintf("Content-Type %q: a %s must say Content-Type: application/json (or application/x-ndjson for NDJSON records), even with no body", truncate(r.Header.Get("Content-Type")), r.Method)}
		}
	}
	return 0, apiError{}
}

// validBearer compares the presented token with the configured one in
// constant time (over their hashes, so that the length leaks nothing
// either).
func validBearer(header string, want [sha256.Size]byte) bool {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// hostName is the host of a Host header, without port or brackets,
// lowercased and without a trailing dot ("localhost." is localhost).
func hostName(hostport string) string {
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		// SplitHostPort does not look at the port: "localhost:evil" is
		// no port of this server.
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return ""
		}
		host = h
	}
	return normalHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

func normalHost(name string) string { return strings.TrimSuffix(strings.ToLower(name), ".") }

// truncate bounds a caller's header in an error answer.
func truncate(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// routeLabel is the metrics' name of the route a request was meant for:
// the sidecar's own by its label, a mounted handler by its pattern.
func routeLabel(labels map[string]string, pattern, method string) string {
	if pattern == "/v1/positions/{source}" {
		if method == http.MethodPut {
			return routePutPos
		}
		return routeGetPos
	}
	if l, ok := labels[pattern]; ok {
		return methodLabel(l, method)
	}
	if pattern == "" {
		return routeUnknown
	}
	return pattern
}
