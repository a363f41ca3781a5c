package client

import (
	"errors"
	"strings"
	"testing"
)

// TestAddressErrorNeverQuotesASecret: an Options.Address that is refused
// is never quoted with a credential it holds: a password holding a / (its
// digits then read as a port, the rest as a path), a token in the query or
// the fragment, user information with % or \ in it.
func TestAddressErrorNeverQuotesASecret(t *testing.T) {
	for _, c := range []struct{ addr, secret string }{
		{"http://admin:1234/5678@127.0.0.1:9464", "5678@127"},
		{"http://admin:1234/5678@127.0.0.1:9464", "1234/5678"},
		{"http://127.0.0.1:9464/?token=s3cr3tvalue", "s3cr3tvalue"},
		{"http://127.0.0.1:9464/?s3cr3tvalue", "s3cr3tvalue"},
		{"http://127.0.0.1:9464/#s3cr3tvalue", "s3cr3tvalue"},
		{"http://127.0.0.1:9464/s3cr3tvalue", "s3cr3tvalue"},
		{"http://admin:pa%zzword@127.0.0.1:9464", "pa%zzword"},
		{"http://admin:p\\ssword@127.0.0.1:9464", "ssword"},
		{"ftp://admin:1234/5678@127.0.0.1:9464", "5678"},
		{"http:/\\admin:s3cr3tvalue@127.0.0.1:9464", "s3cr3tvalue"},
		{"http://[::1]:9464/admin:s3cr3tvalue@x", "s3cr3tvalue"},
		{"admin:1234/5678@127.0.0.1:9464", "5678"},
	} {
		o := Options{Address: c.addr}
		o.EnsureDefaults()
		err := o.Validate()
		if err == nil {
			t.Errorf("Address %q was accepted", c.addr)
			continue
		}
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Address %q: %v is not ErrInvalidOptions", c.addr, err)
		}
		if strings.Contains(err.Error(), c.secret) {
			t.Errorf("Address %q: the error quotes %q: %v", c.addr, c.secret, err)
		}
	}
}
