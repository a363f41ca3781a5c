package charttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
)

// quickStart is the README's Kubernetes quick start, run from the
// repository's root; internal/doctest checks the README prints exactly
// these lines under a marker naming this test.
var quickStart = []string{
	"helm lint deploy/helm/covmirror",
	"helm template covmirror deploy/helm/covmirror -n ingest -f deploy/helm/covmirror/ci/pod-values.yaml",
}

// TestQuickStartCommands runs the README's helm lines through Helm's own
// library, as the helm binary would (no helm binary is needed offline):
// the lint passes without a warning, and the template is deploy/pod.yaml,
// as the README's comment says.
func TestQuickStartCommands(t *testing.T) {
	lintArgs := strings.Fields(quickStart[0])
	if len(lintArgs) != 3 || lintArgs[1] != "lint" || filepath.Join("..", "..", lintArgs[2]) != chartDir {
		t.Fatalf("the lint line %q: want helm lint of %s", quickStart[0], chartDir)
	}
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	res := lint.RunAll(chartDir, nil, namespace, lint.WithKubeVersion(kv))
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("%s: %v", quickStart[0], m)
		}
	}

	args := strings.Fields(quickStart[1])
	// helm template NAME CHART -n NAMESPACE -f VALUES
	if len(args) != 8 || args[1] != "template" || args[2] != release || filepath.Join("..", "..", args[3]) != chartDir ||
		args[4] != "-n" || args[5] != namespace || args[6] != "-f" {
		t.Fatalf("the template line %q: want helm template %s %s -n %s -f VALUES", quickStart[1], release, chartDir, namespace)
	}
	values := filepath.Join("..", "..", args[7])
	if _, err := os.Stat(values); err != nil {
		t.Fatalf("the template line's values file: %v", err)
	}
	manifests, _ := renderFile(t, loadChart(t), values)
	if got, want := podExampleHeader+templateText(manifests), string(moduleFile(t, "deploy/pod.yaml")); got != want {
		t.Errorf("%s does not print deploy/pod.yaml, as the README says\n%s", quickStart[1], firstDifference(got, want))
	}
}
