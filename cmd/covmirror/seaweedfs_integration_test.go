//go:build integration

package main

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/seaweedtest"
)

// TestDemoSeaweedFS runs the demo against SeaweedFS's REST catalog and S3
// warehouse with --catalog-prop settings alone (credentials from the
// environment), and a canned query over the S3 warehouse afterwards.
func TestDemoSeaweedFS(t *testing.T) {
	server := seaweedtest.Start(t)
	props := server.Props()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"--state", t.TempDir(), "--writer", "test"}
	for _, k := range keys {
		if !strings.Contains(k, "access-key") && !strings.Contains(k, "secret") {
			args = append(args, "--catalog-prop", k+"="+props[k])
		}
	}
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), append(args, "demo", "--batches", "200"), &out, &errOut); err != nil {
		t.Fatalf("demo: %v\n%s%s", err, out.String(), errOut.String())
	}
	text := out.String()
	if !strings.Contains(text, "the configured rest catalog") || !strings.Contains(text, "Verdict") {
		t.Fatalf("demo output:\n%s", text)
	}
	ns := text[strings.Index(text, "--namespace ")+len("--namespace "):]
	ns = ns[:strings.Index(ns, " ")]
	out.Reset()
	if err := Run(context.Background(), append(args, "--namespace", ns, "query", "summary", "--csv"), &out, &errOut); err != nil {
		t.Fatalf("query over the S3 warehouse: %v\n%s", err, errOut.String())
	}
	if got := out.String(); !strings.Contains(got, "lake,") || !strings.Contains(got, "warehouse,") {
		t.Fatalf("summary over the demo's table:\n%s", got)
	}
	t.Logf("summary after the demo:\n%s", out.String())
}
