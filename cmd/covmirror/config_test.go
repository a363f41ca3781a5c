package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/iceberg"
)

// TestConfigFile: a configuration file sets the state directory and the
// catalog; the environment overrides the file and flags override both; a
// mistake names the file, the line and the keys there are.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	catalogDir := filepath.Join(dir, "lake")
	props, err := iceberg.EmbeddedProps(catalogDir)
	if err != nil {
		t.Fatal(err)
	}
	conf := "# a pod's configuration\nstate = " + filepath.Join(dir, "state") + "\nwriter = pod-a\n"
	for k, v := range props {
		conf += "catalog." + k + " = " + v + "\n"
	}
	path := filepath.Join(dir, "covmirror.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), args, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := run("--config", path, "record", "--sink", "raw", "--topic", "t", "--partition", "0", "--range", "1:5"); err != nil {
		t.Fatal(out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "local")); err != nil {
		t.Fatalf("the file's state directory was not used: %v", err)
	}
	if out, err := run("--config="+path, "checkpoint"); err != nil {
		t.Fatal(out, err)
	}
	if _, err := os.Stat(filepath.Join(catalogDir, "catalog.db")); err != nil {
		t.Fatalf("the file's catalog was not used: %v", err)
	}
	// The environment overrides the file; flags override the environment.
	t.Setenv("COVMIRROR_CONFIG", path)
	t.Setenv("COVMIRROR_STATE", filepath.Join(dir, "env-state"))
	if out, err := run("record", "--sink", "raw", "--topic", "t", "--partition", "0", "--range", "5:6"); err != nil {
		t.Fatal(out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "env-state", "local")); err != nil {
		t.Fatalf("COVMIRROR_STATE did not override the file: %v", err)
	}
	if out, err := run("--state", filepath.Join(dir, "flag-state"), "record", "--sink", "raw", "--topic", "t", "--partition", "0", "--range", "6:7"); err != nil {
		t.Fatal(out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "flag-state", "local")); err != nil {
		t.Fatalf("--state did not override the environment: %v", err)
	}

	bad := filepath.Join(dir, "bad.conf")
	_ = os.WriteFile(bad, []byte("state = x\nstat = y\n"), 0o644)
	_, err = run("--config", bad, "version")
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "bad.conf:2: unknown key \"stat\"") {
		t.Fatalf("a misspelt key: %v", err)
	}
	_, err = run("--config", filepath.Join(dir, "missing.conf"), "version")
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "missing.conf") {
		t.Fatalf("a missing file: %v", err)
	}
}
