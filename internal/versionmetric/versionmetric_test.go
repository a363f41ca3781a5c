package versionmetric

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/covmirror/covmirror/internal/version"
)

func TestBuildInfo(t *testing.T) {
	i := version.Info{Version: "v0.1.0", Commit: "0123456789abcdef0123456789abcdef01234567", Date: "2026-12-01T00:00:00Z", GoVersion: "go1.26.8"}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(collectorOf(i)); err != nil {
		t.Fatal(err)
	}
	want := `# HELP covmirror_build_info Always 1: the covmirror version, commit, commit date and Go version of this process, as labels.
# TYPE covmirror_build_info gauge
covmirror_build_info{commit="0123456789abcdef0123456789abcdef01234567",date="2026-12-01T00:00:00Z",goversion="go1.26.8",version="v0.1.0"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), Name); err != nil {
		t.Error(err)
	}
	// This binary's own: one series whose labels are Get's.
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(Collector())
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].Metric) != 1 {
		t.Fatalf("gathered %v, %v: want one series", mfs, err)
	}
	got := map[string]string{}
	for _, l := range mfs[0].Metric[0].Label {
		got[l.GetName()] = l.GetValue()
	}
	g := version.Get()
	if got["version"] != g.Version || got["commit"] != g.Commit || got["date"] != g.Date || got["goversion"] != g.GoVersion {
		t.Errorf("labels %v, want version.Get()'s %+v", got, g)
	}
}
