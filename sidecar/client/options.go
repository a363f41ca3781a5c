package client

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/covmirror/covmirror/internal/redact"
)

// Options configures New. Zero values are documented defaults.
type Options struct {
	// Address is the record API's TCP address: host:port
	// ("127.0.0.1:9464", serve's --addr) or an http:// (or https://, behind
	// a proxy that terminates TLS) URL of the server's root. The host must
	// be one the server answers to: localhost, an IP address, or a name
	// given to serve with --allow-host (any other is 421, rule host).
	// Exactly one of Address and Socket is set.
	Address string
	// Socket is the path of the pod's Unix socket (serve's --socket): no
	// token is needed or sent there. Exactly one of Address and Socket is
	// set.
	Socket string
	// Token is the bearer token of serve's --token-file, sent over TCP on
	// every request; visible ASCII only. Never logged, never in an error.
	// Zero value: none (a server with a token then answers 401).
	Token string
	// HTTPClient sends the requests. It is used as given, except that no
	// redirect is followed (a redirect is ErrBadAnswer) and, with Socket,
	// its Transport, which must then be nil or an *http.Transport, is
	// cloned to dial the socket. Zero value: a client of the Client's own,
	// closed by Close, with DefaultAttemptTimeout per attempt.
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts of one call, the first included: 1
	// never retries. Zero value: DefaultMaxAttempts.
	MaxAttempts int
	// MaxAnswer bounds, in bytes, the body of a successful answer the
	// client reads; a longer one is ErrBadAnswer, and not retried (the same
	// request would be answered the same). An error answer is read up to
	// 64 KiB, and its message is its first 200 bytes, redacted. Zero value:
	// DefaultMaxAnswer.
	MaxAnswer int64
	// Logger receives each retry (at Warn, with the route, the attempt and
	// the cause). Zero value: discard.
	Logger *slog.Logger
}

// DefaultMaxAttempts is Options.MaxAttempts' zero value: with the waits
// of MinRetryWait and MaxRetryWait, eight attempts span up to about 11 s,
// a pod's restart.
const DefaultMaxAttempts = 8

// DefaultMaxAnswer is Options.MaxAnswer's zero value: the record API's
// largest answers (a plan, committed rows, gaps) stay far below it unless
// a query spans hundreds of thousands of partitions.
const DefaultMaxAnswer = 64 << 20

// DefaultAttemptTimeout bounds one attempt of the default HTTP client: the
// server's own write timeout (a checkpoint or a plan reads the durable
// tier), so that a hung connection ends in a retry.
const DefaultAttemptTimeout = 60 * time.Second

// The wait before retry n is a random time below MinRetryWait doubled per
// retry, at most MaxRetryWait (backoff.FullJitter), so that clients that
// failed together do not retry together.
const (
	MinRetryWait = 100 * time.Millisecond
	MaxRetryWait = 5 * time.Second
)

// EnsureDefaults fills in zero values. HTTPClient stays nil: New makes the
// client of its own then, since it depends on Socket.
func (o *Options) EnsureDefaults() {
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxAnswer == 0 {
		o.MaxAnswer = DefaultMaxAnswer
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports unusable options, wrapping ErrInvalidOptions. It never
// quotes the token, nor an address's user information.
func (o *Options) Validate() error {
	_, err := o.baseURL()
	if err != nil {
		return err
	}
	for i := 0; i < len(o.Token); i++ {
		if o.Token[i] <= ' ' || o.Token[i] > '~' {
			return fmt.Errorf("%w: Options.Token has a character at byte %d that is not visible ASCII: an Authorization header cannot carry it (read the token file without its trailing newline)", ErrInvalidOptions, i)
		}
	}
	if o.MaxAttempts < 0 {
		return fmt.Errorf("%w: Options.MaxAttempts is %d: give 1 or more (0: %d)", ErrInvalidOptions, o.MaxAttempts, DefaultMaxAttempts)
	}
	if o.MaxAnswer < 0 || o.MaxAnswer == math.MaxInt64 {
		return fmt.Errorf("%w: Options.MaxAnswer is %d: give 1 or more bytes, below %d (0: %d)", ErrInvalidOptions, o.MaxAnswer, int64(math.MaxInt64), DefaultMaxAnswer)
	}
	if o.Socket != "" && o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		if _, ok := o.HTTPClient.Transport.(*http.Transport); !ok {
			return fmt.Errorf("%w: with Options.Socket, Options.HTTPClient.Transport must be nil or an *http.Transport (it is cloned to dial the socket), not %T", ErrInvalidOptions, o.HTTPClient.Transport)
		}
	}
	return nil
}

// socketBase is the URL requests over the socket are sent to: the socket
// takes any Host.
const socketBase = "http://localhost"

// baseURL is the URL of the server's root, without a trailing slash.
func (o *Options) baseURL() (string, error) {
	switch {
	case o.Address == "" && o.Socket == "":
		return "", fmt.Errorf("%w: give Options.Address (the record API's host:port, serve's --addr) or Options.Socket (serve's --socket)", ErrInvalidOptions)
	case o.Address != "" && o.Socket != "":
		return "", fmt.Errorf("%w: Options.Address and Options.Socket are both set: give one (the socket needs no token)", ErrInvalidOptions)
	case o.Socket != "":
		return socketBase, nil
	}
	raw := o.Address
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's errors quote the whole address, user information
		// included.
		return "", fmt.Errorf("%w: Options.Address is not host:port nor an http:// URL", ErrInvalidOptions)
	}
	if redact.StrayAt(raw) {
		// Most often a password holding a / or #: net/url reads its
		// start as a port and the rest as a path; none of it is quoted.
		return "", fmt.Errorf("%w: Options.Address has an @ after its host (user information whose password holds a /, ? or #?): give the server's root, host:port, and the token as Options.Token", ErrInvalidOptions)
	}
	// Messages quote the scheme and host only: a path, query or fragment
	// may hold a token, and the user information a password.
	where := fmt.Sprintf("%q", u.Scheme+"://"+u.Host)
	switch {
	case u.User != nil:
		return "", fmt.Errorf("%w: Options.Address has user information: give the token as Options.Token instead", ErrInvalidOptions)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%w: Options.Address's scheme is %q; the record API is http:// (or https:// behind a proxy)", ErrInvalidOptions, u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("%w: Options.Address has no host: give host:port, e.g. 127.0.0.1:9464", ErrInvalidOptions)
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("%w: Options.Address %s has a path, query or fragment after its host (not quoted: it may hold a token): give the server's root, host:port", ErrInvalidOptions, where)
	}
	return u.Scheme + "://" + u.Host, nil
}
