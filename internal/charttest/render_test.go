package charttest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

var rewrite = flag.Bool("rewrite", false, "regenerate deploy/pod.yaml from the chart (make chart-example)")

const (
	chartDir  = "../../deploy/helm/covmirror"
	release   = "covmirror"
	namespace = "ingest"
	// kubeVersion is the cluster the chart is rendered for: the oldest
	// with native sidecars on by default is 1.29; this is a current one.
	kubeVersion = "v1.33.0"
)

// object is one rendered document.
type object struct {
	Source string // the template, e.g. covmirror/templates/workload.yaml
	Kind   string
	Name   string
	Raw    string
	// Obj is the document decoded strictly into its API type: a pointer
	// to corev1.ConfigMap, appsv1.Deployment, ...
	Obj any
}

func (o object) String() string { return fmt.Sprintf("%s %q (%s)", o.Kind, o.Name, o.Source) }

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart at %s: %v", chartDir, err)
	}
	return ch
}

// valuesFiles are the chart's example values files, ci/*-values.yaml.
func valuesFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("the chart's ci/*-values.yaml: %v %v (want at least 4)", files, err)
	}
	return files
}

func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	v, err := common.ReadValuesFile(path)
	if err != nil {
		t.Fatalf("reading values %s: %v", path, err)
	}
	return v
}

func capabilities(t *testing.T) *common.Capabilities {
	t.Helper()
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	return caps
}

// render renders the chart over vals as helm template does: the values
// checked against values.schema.json, every template executed, NOTES.txt
// rendered and set aside, the manifests in Helm's install order.
func render(t *testing.T, ch *chart.Chart, vals map[string]any) ([]releaseutil.Manifest, error) {
	t.Helper()
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals,
		common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, capabilities(t), false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Engine{Strict: true}.RenderWithContext(t.Context(), ch, top)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("the chart renders %d hooks: it has none by design", len(hooks))
	}
	return manifests, nil
}

// templateText is what helm template prints for manifests.
func templateText(manifests []releaseutil.Manifest) string {
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String()
}

// decode decodes every manifest strictly into its API type: an unknown
// or repeated field, or a kind the chart should not render, fails.
func decode(manifests []releaseutil.Manifest) ([]object, error) {
	var objs []object
	var errs []error
	for _, m := range manifests {
		o := object{Source: m.Name, Kind: m.Head.Kind, Raw: m.Content}
		if m.Head.Metadata != nil {
			o.Name = m.Head.Metadata.Name
		}
		var into any
		switch m.Head.Version + " " + m.Head.Kind {
		case "v1 ConfigMap":
			into = new(corev1.ConfigMap)
		case "v1 Service":
			into = new(corev1.Service)
		case "apps/v1 Deployment":
			into = new(appsv1.Deployment)
		case "apps/v1 StatefulSet":
			into = new(appsv1.StatefulSet)
		case "batch/v1 CronJob":
			into = new(batchv1.CronJob)
		case "networking.k8s.io/v1 NetworkPolicy":
			into = new(networkingv1.NetworkPolicy)
		case "monitoring.coreos.com/v1 PodMonitor":
			into = new(monitoringv1.PodMonitor)
		case "monitoring.coreos.com/v1 PrometheusRule":
			into = new(monitoringv1.PrometheusRule)
		default:
			errs = append(errs, fmt.Errorf("%s: apiVersion %q kind %q is none the chart renders (a Secret least of all)", o, m.Head.Version, m.Head.Kind))
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(m.Content), into); err != nil {
			errs = append(errs, fmt.Errorf("%s: strict decoding into %T: %w", o, into, err))
			continue
		}
		o.Obj = into
		objs = append(objs, o)
	}
	return objs, errors.Join(errs...)
}

// renderFile renders the chart over one values file and decodes it,
// failing the test on any error.
func renderFile(t *testing.T, ch *chart.Chart, path string) ([]releaseutil.Manifest, []object) {
	t.Helper()
	manifests, err := render(t, ch, readValues(t, path))
	if err != nil {
		t.Fatalf("rendering the chart over %s: %v", path, err)
	}
	objs, err := decode(manifests)
	if err != nil {
		t.Fatalf("the chart over %s: %v", path, err)
	}
	return manifests, objs
}

// find returns the objects of kind.
func find(objs []object, kind string) []object {
	return slices.DeleteFunc(slices.Clone(objs), func(o object) bool { return o.Kind != kind })
}

// moduleFile reads a file relative to the module root.
func moduleFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("reading %s: %v", rel, err)
	}
	return b
}
