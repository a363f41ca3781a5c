package pod_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/tier"
)

// TestBannerNamesTheMap: serve's start-up line names the coverage map's
// URL, one that opens the map, also on a wildcard listener (which a
// browser cannot open by its own address).
func TestBannerNamesTheMap(t *testing.T) {
	for _, c := range []struct {
		addr, token, host string
	}{
		{addr: "127.0.0.1:0", host: "127.0.0.1"},
		{addr: ":0", token: apiToken, host: "localhost"},
		{addr: "0.0.0.0:0", token: apiToken, host: "localhost"},
	} {
		p, err := pod.Start(context.Background(), pod.Options{Tier: tier.Settings{State: t.TempDir(), Writer: "test"},
			Addr: c.addr, Token: c.token, Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		line := p.Banner()
		u, err := url.Parse(p.MapURL())
		if err != nil || u.Hostname() != c.host || u.Path != "/" || u.Port() == "" || u.Port() == "0" {
			t.Errorf("--addr %s: map URL %q (%v), want http://%s:PORT/", c.addr, p.MapURL(), err, c.host)
		}
		if !strings.Contains(line, "the coverage map at "+p.MapURL()) || !strings.HasPrefix(line, "serving http://"+p.Addr().String()+"/v1/ ") {
			t.Errorf("--addr %s: start-up line %q names neither the record API first nor the map %s", c.addr, line, p.MapURL())
		}
		resp, err := http.Get(p.MapURL())
		if err != nil {
			t.Fatalf("--addr %s: GET %s: %v", c.addr, p.MapURL(), err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "covmirror coverage map") {
			t.Errorf("--addr %s: GET %s: %s %.100q", c.addr, p.MapURL(), resp.Status, page)
		}
		if err := p.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}
