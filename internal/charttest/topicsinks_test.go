package charttest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTopicSinksReachServe: sidecar.topicSinks becomes one --topic-sinks
// argument per topic, exact names kept (a space, an empty list), on every
// serve the chart renders (the pods' sidecars and the dedicated fleet
// role), so the gaps, the map and the alerts measure a sink only on its
// topics. TestCovmirrorTakesRenderedArgs runs these argument lists through
// the real binary.
func TestTopicSinksReachServe(t *testing.T) {
	ch := loadChart(t)
	for file, want := range map[string][]string{
		"statefulset-postgres-values.yaml": {"--topic-sinks=audit log=", "--topic-sinks=files=lake"},
		"object-fleet-values.yaml":         {"--topic-sinks=clicks=search"},
	} {
		_, objs := renderFile(t, ch, filepath.Join(chartDir, "ci", file))
		serves := 0
		for _, pt := range podTemplates(objs) {
			for _, c := range slices.Concat(pt.template.Spec.InitContainers, pt.template.Spec.Containers) {
				if !slices.Contains(c.Args, "serve") {
					continue
				}
				serves++
				var got []string
				for _, a := range c.Args {
					if strings.HasPrefix(a, "--topic-sinks=") {
						got = append(got, a)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: %s container %q: topic sinks %q, want %q", file, pt.owner, c.Name, got, want)
				}
			}
		}
		if serves == 0 {
			t.Errorf("%s: no serve container rendered", file)
		}
	}
}
