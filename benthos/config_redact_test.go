package benthos_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"

	"gopkg.in/yaml.v3"

	"github.com/covmirror/covmirror/internal/testseed"
)

// setPath sets the value at a dotted path of o, making the objects on
// the way.
func setPath(o obj, path string, v any) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := o[k].(obj)
		if !ok {
			next = obj{}
			o[k] = next
		}
		o = next
	}
	o[keys[len(keys)-1]] = v
}

// TestConfigErrorsNeverEchoACredential: a credential-shaped value (a DSN
// or an S3 URL with its keys, a key: value, a presigned URL) written in
// any field of the covmirror output or the covmirror_plan input whose
// value Benthos' lint or the plugin's own checks quote (an enum, a
// duration, a layout, a pattern, an address) appears in no lint, no
// build or run error and no log line: pod.durable's lint printed "value
// postgres://u:PASSWORD@h is not a valid option".
func TestConfigErrorsNeverEchoACredential(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	secret := func() string {
		b := make([]byte, 12+rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	shapes := []func(s string) string{
		func(s string) string { return "postgres://covmirror:" + s + "@db.internal:5432/raw" },
		func(s string) string { return "s3://AKIAEXAMPLE:" + s + "@bucket/prefix" },
		func(s string) string { return "password: " + s },
		func(s string) string { return "https://bucket.s3.example/o?X-Amz-Signature=" + s },
	}
	type field struct {
		input bool // the covmirror_plan input, else the output
		path  string
		wrap  func(string) any
	}
	str := func(v string) any { return v }
	fields := []field{
		{false, "pod.durable", str}, {false, "pod.interval", str}, {false, "pod.replicate_every", str},
		{false, "pod.object.layout", str}, {false, "pod.postgres.layout", str}, {false, "timeout", str},
		{false, "permanent.errors", func(v string) any { return []any{"(" + v} }},
		{false, "sidecar.address", str}, {false, "pod.addr", str}, {false, "pod.metrics_listen", str},
		{true, "pod.durable", str}, {true, "pod.interval", str}, {true, "max_batches", str},
		{true, "pod.object.layout", str}, {true, "sidecar.address", str},
	}
	e := env(t)
	// The states, removed at the end: not t.TempDir, whose removal fails
	// the subtest when a pod's shutdown still writes there.
	states, err := os.MkdirTemp("", "covmirror-config-redact")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(states) })
	for _, f := range fields {
		for i, shape := range shapes {
			s := secret()
			name := fmt.Sprintf("%s/%s/%d", map[bool]string{false: "output", true: "covmirror_plan"}[f.input], f.path, i)
			t.Run(name, func(t *testing.T) {
				state, err := os.MkdirTemp(states, "")
				if err != nil {
					t.Fatal(err)
				}
				var comp obj
				var input, output obj
				if f.input {
					comp = obj{"sinks": []any{"lake"}, "pod": obj{"state": state}}
					input, output = obj{"covmirror_plan": comp}, obj{"drop": obj{}}
				} else {
					out := covmirrorOutput("lake", false, state, obj{"drop": obj{}})
					comp = out["covmirror"].(obj)
					input, output = generate(1, 1), out
				}
				setPath(comp, f.path, f.wrap(shape(s)))
				var said strings.Builder
				compYAML, err := yaml.Marshal(comp)
				if err != nil {
					t.Fatal(err)
				}
				linter := e.NewComponentConfigLinter()
				lintYAML := append([]byte(map[bool]string{false: "covmirror:\n", true: "covmirror_plan:\n"}[f.input]), indent(compYAML)...)
				lint := linter.LintOutputYAML
				if f.input {
					lint = linter.LintInputYAML
				}
				lints, err := lint(lintYAML)
				fmt.Fprintln(&said, lints, err)
				b := e.NewStreamBuilder()
				logs := new(logtest.Buffer)
				b.SetLogger(slog.New(slog.NewTextHandler(logs, nil)))
				if err := b.SetYAML(stream(t, input, output)); err != nil {
					fmt.Fprintln(&said, err)
				} else if st, err := b.Build(); err != nil {
					fmt.Fprintln(&said, err)
				} else {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					fmt.Fprintln(&said, st.Run(ctx)) // returns at ctx's end without stopping the stream
					cancel()
					_ = st.StopWithin(time.Minute) // closes the output: the process's pod
				}
				said.WriteString(logs.String())
				if strings.Contains(said.String(), s[:6]) {
					t.Errorf("%s = %q is echoed:\n%s", f.path, shape(s), said.String())
				}
			})
		}
	}
}

// indent is y indented by two spaces, a component's body under its name.
func indent(y []byte) []byte {
	lines := strings.SplitAfter(string(y), "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return []byte(b.String())
}
