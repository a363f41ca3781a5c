package main

import (
	"errors"
	"flag"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// redacted is a connection string with its password replaced by xxxxx,
// for usage, errors and logs: a URL's user password and password=
// parameter, and a key=value DSN's password. A setting that is neither is
// returned as it is.
func redacted(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Opaque == "" {
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return dsnPassword.ReplaceAllString(s, "${1}xxxxx")
}

// dsnPassword is a key=value DSN's password, quoted ('...' with \' and \\
// escapes) or not.
var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']\S*)`)

// secretFlag is a string flag whose value is printed redacted: its
// default in --help, and a second value's error.
type secretFlag struct{ p *string }

func (f secretFlag) Set(s string) error { *f.p = s; return nil }

func (f secretFlag) String() string {
	if f.p == nil {
		return ""
	}
	return redacted(*f.p)
}

// redactFlagError is err with the values args give fs's secret flags
// redacted: the flag package quotes a value it refused.
func redactFlagError(err error, fs *flag.FlagSet, args []string) error {
	secret := func(name string) bool {
		f := fs.Lookup(strings.TrimLeft(name, "-"))
		if f == nil {
			return false
		}
		v := f.Value
		if o, ok := v.(*onceValue); ok {
			v = o.Value
		}
		_, ok := v.(secretFlag)
		return ok
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
		if r := redacted(value); r != value {
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
