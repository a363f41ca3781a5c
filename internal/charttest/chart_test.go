package charttest

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestLint: helm lint (Helm's own linter, strict: a warning fails) passes
// over every example values file.
func TestLint(t *testing.T) {
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range valuesFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			res := lint.RunAll(chartDir, readValues(t, file), namespace, lint.WithKubeVersion(kv))
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint over %s: %v", file, m)
				} else {
					t.Logf("helm lint over %s: %v", file, m)
				}
			}
		})
	}
}

// TestRenderedObjects: helm template over every example values file
// renders objects that decode strictly into the Kubernetes API's types
// (the Prometheus Operator's for its resources) and pass the checks a
// cluster would make, with covmirror's sidecar native, non-root, on a
// read-only root file system, probed over HTTP, and given credentials
// only from Secrets.
func TestRenderedObjects(t *testing.T) {
	ch := loadChart(t)
	for _, file := range valuesFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, objs := renderFile(t, ch, file)
			if err := checkCluster(objs); err != nil {
				t.Errorf("the chart over %s:\n%v", file, err)
			}
			if len(find(objs, "ConfigMap")) != 1 {
				t.Errorf("the chart over %s renders %d ConfigMaps, want the one configuration file", file, len(find(objs, "ConfigMap")))
			}
		})
	}
}

// TestPodExample: deploy/pod.yaml is the chart's rendered output over
// ci/pod-values.yaml, byte for byte (make chart-example, or -rewrite,
// regenerates it).
func TestPodExample(t *testing.T) {
	manifests, _ := renderFile(t, loadChart(t), filepath.Join(chartDir, "ci", "pod-values.yaml"))
	want := podExampleHeader + templateText(manifests)
	const rel = "deploy/pod.yaml"
	if *rewrite {
		if err := os.WriteFile(filepath.Join("..", "..", rel), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := string(moduleFile(t, rel)); got != want {
		t.Errorf("%s is not the chart's rendered example: run make chart-example and review the diff\n%s", rel, firstDifference(got, want))
	}
}

const podExampleHeader = `# An example ingest pod with covmirror as its native sidecar: the Helm
# chart's output (deploy/helm/covmirror, release "covmirror", namespace
# "ingest") over its ci/pod-values.yaml, as helm template prints it.
# Generated: edit the chart and run make chart-example; internal/charttest
# checks that this file is what the chart renders. docs/deployment.md says
# what each object does.
#
#   helm template covmirror deploy/helm/covmirror -n ingest -f deploy/helm/covmirror/ci/pod-values.yaml
`

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  file:  " + gl + "\n  chart: " + wl
		}
	}
	return "(they differ in line endings)"
}

// TestAlertsOneSource: the chart's alert rules and deploy/alerts.yaml (the
// file promtool and the metric-name tests read) are one file, and the
// rendered PrometheusRule holds exactly its groups.
func TestAlertsOneSource(t *testing.T) {
	chartRules := moduleFile(t, "deploy/helm/covmirror/files/alerts.yaml")
	if !bytes.Equal(chartRules, moduleFile(t, "deploy/alerts.yaml")) {
		t.Fatal("deploy/alerts.yaml and deploy/helm/covmirror/files/alerts.yaml differ: they are one set of rules; edit one and copy it over the other (cp deploy/alerts.yaml deploy/helm/covmirror/files/alerts.yaml)")
	}
	var file struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(chartRules, &file); err != nil {
		t.Fatalf("deploy/alerts.yaml as PrometheusRule groups: %v", err)
	}
	_, objs := renderFile(t, loadChart(t), filepath.Join(chartDir, "ci", "default-values.yaml"))
	rules := find(objs, "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("the default values render %d PrometheusRules, want 1", len(rules))
	}
	got := rules[0].Obj.(*monitoringv1.PrometheusRule).Spec.Groups
	if len(file.Groups) == 0 || !reflect.DeepEqual(got, file.Groups) {
		t.Errorf("the rendered PrometheusRule's groups are not deploy/alerts.yaml's:\n got %+v\nwant %+v", got, file.Groups)
	}
}

// TestNoSecretRendered: the chart never renders a credential's value,
// even one given where it does not belong: a Secret's name is all it
// takes, and inline credentials are refused naming the key, never the
// value.
func TestNoSecretRendered(t *testing.T) {
	ch := loadChart(t)
	const secret = "hunter2-e5b1"
	for _, vals := range []string{
		"config: {settings: {postgres.url: 'postgres://u:" + secret + "@db/x'}}",
		"config: {catalog: {credential: 'client:" + secret + "'}}",
		"config: {settings: {object.s3.secret-access-key: " + secret + "}}",
		"reconcile: {enabled: true, checkers: {wh: {kind: sql, dsn: 'postgres://u:" + secret + "@wh/x'}}}",
	} {
		_, err := render(t, ch, parse(t, vals))
		if err == nil {
			t.Errorf("values %s rendered: an inline credential must be refused", vals)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("values %s: the error repeats the credential: %v", vals, err)
		}
	}
	// Every credential given as a Secret renders as a reference only.
	_, objs := renderFile(t, ch, filepath.Join(chartDir, "ci", "statefulset-postgres-values.yaml"))
	for _, o := range objs {
		if _, ok := o.Obj.(*corev1.Secret); ok {
			t.Errorf("%s: the chart renders no Secret", o)
		}
	}
}

func parse(t *testing.T, vals string) map[string]any {
	t.Helper()
	v, err := common.ReadValues([]byte(vals))
	if err != nil {
		t.Fatalf("values %s: %v", vals, err)
	}
	return v
}
