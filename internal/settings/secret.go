package settings

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/covmirror/covmirror/internal/redact"
)

// Redact is a connection string with its password replaced by xxxxx, for
// usage, errors and logs: a URL's user password, a user name alone outside
// a database URL (https://TOKEN@host/ is a token), a query parameter
// naming a password, secret or token (password=, sslpassword=, in any
// case), and a key=value DSN's password. A setting that is neither is
// returned as it is.
func Redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Opaque == "" && !redact.StrayAt(s) {
		if _, hasPassword := u.User.Password(); u.User != nil && !hasPassword && !roleSchemes[strings.ToLower(u.Scheme)] {
			u.User = url.User("xxxxx")
		}
		q, changed := u.Query(), false
		for k := range q {
			if secretParam.MatchString(k) {
				q.Set(k, "xxxxx")
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	// A URL net/url refuses (a bare % in its password), or whose password
	// holds a /, ? or # it would read as a path, query or fragment, still
	// has its userinfo redacted: up to the last @.
	s = urlUserinfo.ReplaceAllString(s, "${1}xxxxx@")
	if m := urlUser.FindStringSubmatch(s); m != nil && !roleSchemes[strings.ToLower(m[2])] {
		s = urlUser.ReplaceAllString(s, "${1}xxxxx@")
	}
	return dsnPassword.ReplaceAllString(s, "${1}xxxxx")
}

// roleSchemes are the URLs whose user name alone is a database role, the
// password coming from elsewhere (PGPASSWORD, ~/.pgpass): shown, as the
// role an error is about. Elsewhere a user name alone is a token.
var roleSchemes = map[string]bool{"postgres": true, "postgresql": true, "mysql": true}

// urlUser is a URL's user name with no password, found without parsing
// the URL: up to the last @ before a colon, since the name may hold /, ?,
// # or @.
var urlUser = regexp.MustCompile(`^(([A-Za-z][A-Za-z0-9+.-]*)://)[^:]+@`)

// secretParam is a query parameter that holds a credential.
var secretParam = regexp.MustCompile(`(?i)password|passwd|secret|token`)

// urlUserinfo is a URL's user:password@, found without parsing the URL: up
// to the last @, since the password may hold /, ?, # or @.
var urlUserinfo = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*:).*@`)

// dsnPassword is a key=value DSN's password, quoted ('...' with \' and \\
// escapes) or not.
var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']\S*)`)

// secretValue is a Secret setting's flag: printed redacted, its default
// in --help and a second value's error.
type secretValue struct{ p *string }

func (f secretValue) Set(s string) error { *f.p = s; return nil }

func (f secretValue) String() string {
	if f.p == nil {
		return ""
	}
	return Redact(*f.p)
}

func isSecret(v flag.Value) bool {
	if o, ok := v.(*onceValue); ok {
		v = o.Value
	}
	_, ok := v.(secretValue)
	return ok || secretEntries(v)
}

// secretEntries reports whether v is a Map's flag whose values may be
// credentials: an entry it refuses is not shown at all, since a malformed
// one has no key to tell its value by.
func secretEntries(v flag.Value) bool {
	c, ok := v.(collection)
	return ok && c.v != nil && c.v.s.SecretEntries
}

// Parse parses fs's flags silently: the flag package would print a bad
// flag's error and the whole usage, and the caller prints the error again.
// Every flag but the repeatable ones takes one value (a second would
// silently replace the first: a wrong answer where the flag is --sink or
// --reference). It returns flag.ErrHelp after printing the usage for
// --help, and a refused value with the secret flags' values redacted.
func Parse(fs *flag.FlagSet, args []string, repeatable func(name string) bool) error {
	fs.VisitAll(func(f *flag.Flag) {
		if _, wrapped := f.Value.(*onceValue); !wrapped && !repeatable(f.Name) {
			f.Value = &onceValue{Value: f.Value, name: f.Name}
		}
	})
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	}
	return redactFlagError(err, fs, args)
}

// onceValue refuses a flag's second value.
type onceValue struct {
	flag.Value
	name string
	seen bool
}

func (v *onceValue) Set(s string) error {
	if v.seen {
		if isSecret(v.Value) {
			s = Redact(s) // the first is redacted by its String
		}
		return fmt.Errorf("given twice (%q, then %q): give --%s once", v.Value.String(), s, v.name)
	}
	v.seen = true
	return v.Value.Set(s)
}

// String is the wrapped value's; "" for the zero onceValue, on which the
// flag package calls it to tell a default from none in --help.
func (v *onceValue) String() string {
	if v == nil || v.Value == nil {
		return ""
	}
	return v.Value.String()
}

// IsBoolFlag keeps -json and the like valid without a value.
func (v *onceValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// redactFlagError is err with the values args give fs's secret flags
// redacted: the flag package quotes a value it refused.
func redactFlagError(err error, fs *flag.FlagSet, args []string) error {
	flagOf := func(name string) *flag.Flag { return fs.Lookup(strings.TrimLeft(name, "-")) }
	secret := func(name string) bool {
		f := flagOf(name)
		return f != nil && isSecret(f.Value)
	}
	msg := err.Error()
	for i, a := range args {
		name, value, inline := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "-") || !secret(name) {
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				continue
			}
			value = args[i+1]
		}
		r := Redact(value)
		if f := flagOf(name); f != nil && secretEntries(f.Value) && value != "" {
			r = "(not shown: it may hold a credential)"
		}
		if r != value {
			// as given, and as the flag package quotes it (%q)
			msg = strings.ReplaceAll(msg, value, r)
			msg = strings.ReplaceAll(msg, strconv.Quote(value), strconv.Quote(r))
		}
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}
