package pod

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Banner is the line `covmirror serve` prints once the pod listens: the
// record API's base first (scripts and tests read the word after
// "serving": internal/childproc.ServeAddr), then /debug/coverage, the
// coverage map's URL (MapURL), the metrics routes and the checkpoint
// interval.
func (p *Pod) Banner() string {
	tcp := p.Addr()
	var b strings.Builder
	fmt.Fprintf(&b, "serving http://%s/v1/ (the record API)", tcp)
	if p.opts.Socket != "" {
		fmt.Fprintf(&b, " and unix:%s", p.opts.Socket)
	}
	fmt.Fprintf(&b, ", http://%s/debug/coverage and the coverage map at %s", tcp, p.MapURL())
	if p.opts.MetricsOnAPI {
		fmt.Fprintf(&b, ", http://%s/metrics", tcp)
	}
	if m := p.MetricsAddr(); m != nil {
		fmt.Fprintf(&b, "; read-only: http://%s/healthz, /readyz and /metrics", m)
	}
	fmt.Fprintf(&b, "; checkpoint every %s", p.opts.Interval)
	return b.String()
}

// MapURL is the coverage map's URL on the record API's TCP listener, one a
// browser on the pod's host opens: a wildcard listener (0.0.0.0, ::) is
// named localhost, since a browser cannot open a wildcard address
// (Chromium refuses 0.0.0.0) and the host guard admits localhost.
func (p *Pod) MapURL() string {
	host := p.Addr().String()
	if a, ok := p.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		host = net.JoinHostPort("localhost", strconv.Itoa(a.Port))
	}
	return "http://" + host + "/"
}
