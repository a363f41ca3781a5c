package charttest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestCovmirrorTakesRenderedArgs: every covmirror container the chart
// renders, over every example values file, runs a command line and a
// configuration file that covmirror itself accepts: the real binary parses
// the rendered ConfigMap (unknown keys refused) and the container's
// arguments (unknown flags refused) up to --help, so a flag the chart
// passes and serve lacks fails here, not in a cluster.
func TestCovmirrorTakesRenderedArgs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the covmirror binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "covmirror")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/covmirror").CombinedOutput(); err != nil {
		t.Fatalf("building covmirror: %v\n%s", err, out)
	}
	ch := loadChart(t)
	runs := 0
	for _, path := range valuesFiles(t) {
		_, objs := renderFile(t, ch, path)
		conf := filepath.Join(dir, filepath.Base(path)+".conf")
		for _, o := range find(objs, "ConfigMap") {
			if text, ok := o.Obj.(*corev1.ConfigMap).Data["covmirror.conf"]; ok {
				if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, pt := range podTemplates(objs) {
			spec := pt.template.Spec
			for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
				if !strings.HasPrefix(c.Image, image) {
					continue
				}
				args := slices.Clone(c.Args)
				for i, a := range args {
					if strings.HasPrefix(a, "--config=") {
						args[i] = "--config=" + conf
					}
				}
				cmd := exec.Command(bin, append(args, "--help")...)
				cmd.Dir = dir
				cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if errors.As(err, &exit) || err != nil {
					t.Errorf("%s over %s: container %q: covmirror %s refused: %v\n%s", pt.owner, filepath.Base(path), c.Name, strings.Join(c.Args, " "), err, out)
				}
				runs++
			}
		}
	}
	if runs == 0 {
		t.Fatal("no covmirror container rendered over any values file")
	}
	t.Logf("%d covmirror command lines accepted", runs)
}
