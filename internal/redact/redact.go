package redact

import (
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mark replaces a credential.
const Mark = "[redacted]"

// MinSecret is the shortest secret Text replaces: a shorter one (a
// one-letter password) would blank out ordinary words of the text, and
// guessing it is no harder for its absence from an error.
const MinSecret = 4

// shapes are credentials found by their shape, not by value, each with
// what it keeps ($1): a header's Authorization value (the rest of its
// line), a bearer token, a URL's user information, and the value of a key
// that names a credential (password=, "token": "...", secret-access-key =
// ..., private_key:, X-Amz-Signature=), JSON-quoted or not.
var shapes = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?i)(authorization"?\s*[:=]\s*"?)[^\r\n"]*`), "${1}" + Mark},
	{regexp.MustCompile(`(?i)(\bbearer\s+)[^\s"',;]+`), "${1}" + Mark},
	// Up to the last @ of the word: a password may hold /, ?, # or @, and
	// a ' (a valid character of user information, which pgx takes).
	{regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://)[^\s"<>]*@`), "${1}" + Mark + "@"},
	// A key naming a credential, "key" after it or not (secret-key,
	// private_key), and a presigned URL's signature, a credential until
	// it expires.
	// A value in double quotes is replaced to its closing quote (a
	// passphrase's spaces, a JSON-escaped \" included), or to the end of
	// its line in a text cut before it; the quotes ($2) are kept.
	{regexp.MustCompile(`(?i)((?:(?:password|passwd|pwd|token|secret|credentials?|signature|\bsig)(?:[-_.]?key)?|(?:access|api|private)[-_.]?key)"?\s*[:=]\s*)(?:(")(?:[^"\\\r\n]|\\.)*"?|'(?:[^'\\]|\\.)*'|[^\s"',;&]+)`), "${1}${2}" + Mark + "${2}"},
}

// Text is s with every credential in it replaced by Mark: each of secrets
// (those of at least MinSecret bytes) wherever it occurs, and whatever has
// a credential's shape (see shapes). cut says s was cut short at its end
// (a bounded read): a tail of s that is the start of a secret, or a URL's
// authority that its @ may have followed, is dropped then.
func Text(s string, cut bool, secrets ...string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	secrets = encoded(append(remembered(), secrets...))
	for _, sec := range longestFirst(secrets) {
		s = strings.ReplaceAll(s, sec, Mark)
	}
	if cut {
		s = dropSecretTail(s, secrets)
		if loc := openAuthority.FindStringIndex(s); loc != nil {
			s = s[:loc[0]] + Mark
		}
	}
	for _, sh := range shapes {
		s = sh.re.ReplaceAllString(s, sh.with)
	}
	return s
}

// Secrets are the credentials in s that Text finds by their shape (a
// URL's user information and its password, a key's value, a bearer token,
// an Authorization value), each of at least MinSecret bytes: for a caller
// that redacts an error quoting a part of s apart from the rest (a parser
// quoting a port, a setting's value cut at a colon), where the part alone
// has no shape, to give to Text or Error as secrets.
func Secrets(s string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= MinSecret && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, sh := range shapes {
		for _, m := range sh.re.FindAllStringSubmatchIndex(s, -1) {
			v := strings.TrimSuffix(s[m[3]:m[1]], "@")
			v = strings.TrimPrefix(strings.TrimSuffix(v, `"`), `"`)
			add(strings.Trim(v, "'"))
			if _, after, ok := strings.Cut(v, ":"); ok {
				add(after) // a password apart from its user
			}
			if f := strings.Fields(v); len(f) > 1 {
				add(f[len(f)-1]) // an Authorization value apart from its scheme
			}
		}
	}
	return out
}

// known are the secrets Remember was given.
var known struct {
	sync.RWMutex
	secrets []string
}

// Remember makes every later Text (and Error, Bounded) of this process
// replace secrets too, whether or not its caller names them: a credential
// told from other text only by where it was configured (a REST catalog's
// header.X-Vendor-Auth value), which an error from deep in a tier may
// quote long after, to a caller that knows no settings (the CLI's last
// word, the logger, an HTTP answer). Shorter than MinSecret: ignored.
func Remember(secrets ...string) {
	known.Lock()
	defer known.Unlock()
	for _, s := range secrets {
		if len(s) >= MinSecret && !slices.Contains(known.secrets, s) {
			known.secrets = append(known.secrets, s)
		}
	}
}

func remembered() []string {
	known.RLock()
	defer known.RUnlock()
	return slices.Clone(known.secrets)
}

// openAuthority is a URL at the end of a text cut short without an @: its
// user information's @ may have been cut off (a password may hold a /).
var openAuthority = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"<>@]*$`)

// Bounded is Text(s, cut, secrets...) cut to at most n bytes (at a rune
// boundary, "..." added): the redaction first, so that a cut never leaves a
// credential's prefix.
func Bounded(s string, n int, cut bool, secrets ...string) string {
	s = Text(s, cut, secrets...)
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// encoded is secrets with the forms an echo may give each back in: JSON
// string contents (\" \\ \u003c ..., either case of hex) and
// percent-encoding (a query's and a path's, either case of hex). A token
// of visible ASCII may hold a character each of them rewrites, and the
// text would then hold it in no form Text replaces, whole or by a prefix.
func encoded(secrets []string) []string {
	out := make([]string, 0, len(secrets))
	seen := make(map[string]bool)
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, sec := range secrets {
		add(sec)
		if sec == "" {
			continue
		}
		b, _ := json.Marshal(sec)
		html := string(b[1 : len(b)-1])
		var plain strings.Builder
		e := json.NewEncoder(&plain)
		e.SetEscapeHTML(false)
		_ = e.Encode(sec)
		js := strings.TrimSuffix(plain.String(), "\n")
		// Each form's own escapes only change case: a literal %6c of the
		// secret is no escape in its JSON form.
		for _, v := range []struct {
			form string
			esc  *regexp.Regexp
		}{{html, jsonEscape}, {js[1 : len(js)-1], jsonEscape}, {url.QueryEscape(sec), percentEscape}, {url.PathEscape(sec), percentEscape}} {
			add(v.form)
			add(hexCase(v.form, v.esc, strings.ToUpper))
			add(hexCase(v.form, v.esc, strings.ToLower))
		}
	}
	return out
}

// The escapes whose hex digits an encoder may write in either case.
var (
	jsonEscape    = regexp.MustCompile(`\\u[0-9a-fA-F]{4}`)
	percentEscape = regexp.MustCompile(`%[0-9a-fA-F]{2}`)
)

// hexCase is s with the hex digits of its escapes (esc) in one case: the
// last 2 (%XX) or 4 (\uXXXX) bytes of each.
func hexCase(s string, esc *regexp.Regexp, to func(string) string) string {
	return esc.ReplaceAllStringFunc(s, func(m string) string {
		i := len(m) - 2
		if m[0] == '\\' {
			i = len(m) - 4
		}
		return m[:i] + to(m[i:])
	})
}

func longestFirst(secrets []string) []string {
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if len(s) >= MinSecret {
			out = append(out, s)
		}
	}
	// Longest first: a DSN before the password it contains.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// dropSecretTail drops the longest tail of s that begins one of secrets:
// the longest over all of them, since a secret's encoded forms share its
// start.
func dropSecretTail(s string, secrets []string) string {
	longest := 0
	for _, sec := range secrets {
		for n := min(len(sec)-1, len(s)); n > longest; n-- {
			if strings.HasSuffix(s, sec[:n]) {
				longest = n
				break
			}
		}
	}
	if longest == 0 {
		return s
	}
	return s[:len(s)-longest] + Mark
}

// URL is rawURL for a message: its scheme, host and path only, never its
// user information, query or fragment (a token, a presigned signature). A
// URL net/url refuses is never echoed (url.Parse's error quotes it whole,
// password included): "(an unparsable URL)", with its scheme and host when
// they can be read without the rest.
func URL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Opaque != "" || StrayAt(rawURL) {
		return unparsable(rawURL)
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	shown := u.String()
	if strings.Contains(rawURL, "://") && !strings.Contains(shown, "://") {
		shown = u.Scheme + "://" + strings.TrimPrefix(shown, u.Scheme+":") // s3:// prints as s3: otherwise
	}
	return Text(shown, false)
}

// StrayAt reports whether rawURL has an @ after its authority: most often
// user information whose password holds a /, ? or # unescaped, which
// net/url reads as the start of a path, query or fragment, so that the
// password would be sent, logged and printed as one.
func StrayAt(rawURL string) bool {
	at := strings.LastIndexByte(rawURL, '@')
	if at < 0 {
		return false
	}
	rest := rawURL
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	end := len(rawURL) - len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end += i
	} else {
		end = len(rawURL)
	}
	return at > end
}

// hostOnly is a URL's scheme and host, read without parsing the rest: no
// @ before them.
var hostOnly = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*)://([a-zA-Z0-9.-]+(?::[0-9]+)?)(?:[/?#]|$)`)

func unparsable(rawURL string) string {
	if m := hostOnly.FindStringSubmatch(rawURL); m != nil && !strings.Contains(rawURL, "@") {
		return "(an unparsable URL at " + m[1] + "://" + m[2] + ")"
	}
	if len(rawURL) <= 256 && !strings.ContainsAny(rawURL, "@?#") {
		// No user information, query or fragment, where a credential goes:
		// a host:port without a scheme, say, is shown to be corrected.
		return Text(rawURL, false)
	}
	return "(an unparsable URL)"
}

// Status is an HTTP answer's status line for a message: redacted, and
// quoted (%q) so that a control character or a forged line break in a
// server's status text prints as an escape.
func Status(status string) string {
	return strconv.Quote(Text(status, false))
}

// Error is err with its message redacted as Text redacts (nil for nil): a
// driver's or net/http's error may quote a URL, a DSN or an answer. The
// URL of a *url.Error in err (net/http's, which quotes the request's URL
// whole) is shown as URL shows it: no query or fragment, where a service's
// key or a signature may be (?code=, ?sig=) in a form no shape knows. It
// still wraps err, so that errors.Is finds a timeout or a sentinel.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" {
		shown := URL(ue.URL)
		msg = strings.ReplaceAll(msg, strconv.Quote(ue.URL), strconv.Quote(shown))
		msg = strings.ReplaceAll(msg, ue.URL, shown)
	}
	msg = Text(quoteConnectTarget(msg), false, secrets...)
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// BoundedError is Error(err, secrets...) with its message cut as Bounded
// cuts a text, to at most n bytes (and "..."): a transport's error may
// quote what a server sent (net/http's, a status line it could not parse,
// up to its 10 MiB bound on an answer's head). It still wraps err.
func BoundedError(err error, n int, secrets ...string) error {
	err = Error(err, secrets...)
	if err == nil || len(err.Error()) <= n {
		return err
	}
	return &redacted{msg: Bounded(err.Error(), n, false), err: err}
}

// pgConnect is the head pgx gives a failed connection's error (a
// *pgconn.ConnectError): the role and the database as they were given,
// unquoted, where a space, a backquote or a line break in a name would
// read as the message's own.
var pgConnect = regexp.MustCompile("(?s)failed to connect to `user=(.*?) database=(.*?)`:")

// quoteConnectTarget is msg with pgx's connection head's role and
// database quoted (%q).
func quoteConnectTarget(msg string) string {
	return pgConnect.ReplaceAllStringFunc(msg, func(m string) string {
		sm := pgConnect.FindStringSubmatch(m)
		return "failed to connect to user " + strconv.Quote(sm[1]) + " database " + strconv.Quote(sm[2]) + ":"
	})
}
