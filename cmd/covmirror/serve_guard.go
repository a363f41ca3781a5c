package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/covmirror/covmirror/sidecar"
)

// guardFlags are serve's settings for what the API admits over TCP (the
// sidecar's guard): the bearer token's file and the host names besides
// localhost and IP literals.
type guardFlags struct {
	tokenFile *string
	hosts     []string
}

// guardSettings are guardFlags resolved: the token and the allowed hosts.
// The token is never printed or logged.
type guardSettings struct {
	token string
	hosts []string
}

// tokenFileFlag is --token-file, for serve and for the commands that call
// a running pod.
func tokenFileFlag(fs *flag.FlagSet, g *globals, use string) *string {
	return fs.String("token-file", g.cfg.value("token-file", "COVMIRROR_TOKEN_FILE", ""), use+" (mode 0600 or narrower; env COVMIRROR_TOKEN_FILE; config file token-file)")
}

func addGuardFlags(fs *flag.FlagSet, g *globals) *guardFlags {
	gf := &guardFlags{tokenFile: tokenFileFlag(fs, g, "a file holding the bearer token every request over TCP must carry as Authorization: Bearer TOKEN, but the map's page (required for an --addr other hosts can reach)")}
	fs.Func("allow-host", "a host name requests may give as Host besides localhost, IP addresses and --addr's host, e.g. a Service's DNS name; repeatable (env COVMIRROR_ALLOW_HOSTS, comma-separated; config file allow-hosts)", func(h string) error {
		gf.hosts = append(gf.hosts, strings.TrimSpace(h))
		return nil
	})
	return gf
}

// resolve reads the token file and lists the allowed hosts: the first of
// --allow-host, COVMIRROR_ALLOW_HOSTS and the configuration file's
// allow-hosts that has any, and --addr's host when it is a name.
func (gf *guardFlags) resolve(g *globals, addr string) (guardSettings, error) {
	var gs guardSettings
	if *gf.tokenFile != "" {
		tok, err := readToken(*gf.tokenFile)
		if err != nil {
			return gs, err
		}
		gs.token = tok
	}
	hosts := gf.hosts
	if len(hosts) == 0 {
		hosts = splitList(g.cfg.value("allow-hosts", "COVMIRROR_ALLOW_HOSTS", ""))
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && net.ParseIP(host) == nil {
		hosts = append(hosts, host)
	}
	gs.hosts = hosts
	return gs, nil
}

// readToken reads a token file; an unusable one is a usage error.
func readToken(path string) (string, error) {
	tok, err := sidecar.ReadTokenFile(path)
	if err != nil {
		return "", usageError{fmt.Errorf("--token-file: %w", err)}
	}
	return tok, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// options sets the guard's fields of the sidecar's options; the map's
// page (GET /) holds no data and asks for the token itself.
func (gs guardSettings) options(o *sidecar.Options) {
	o.Token, o.AllowedHosts = gs.token, gs.hosts
	if gs.token != "" {
		o.PublicPaths = []string{"/"}
	}
}

// listen opens the TCP listener: an address other hosts can reach needs
// the token (a usage error without one).
func (gs guardSettings) listen(g *globals, addr string) (net.Listener, error) {
	ln, err := sidecar.ListenTCP(addr, gs.token != "", g.logger)
	if errors.Is(err, sidecar.ErrNotLoopback) {
		return nil, usageError{fmt.Errorf("serve: %w", err)}
	}
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return ln, nil
}

// authorize adds the token of --token-file, if any, to a request to a
// running pod.
func authorize(req *http.Request, tokenFile string) error {
	if tokenFile == "" {
		return nil
	}
	tok, err := readToken(tokenFile)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}
