package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// buildArchive builds an image of a small stand-in binary and a stand-in
// library in src (kept at its path in the image) into dir/name.
func buildArchive(t *testing.T, src, dir, name string) string {
	t.Helper()
	bin := filepath.Join(src, "covmirror")
	lib := filepath.Join(src, "libfake.so.1")
	if err := errors.Join(os.WriteFile(bin, []byte("#!not a shell\n"), 0o755), os.WriteFile(lib, []byte("\x7fELF fake"), 0o644)); err != nil {
		t.Fatal(err)
	}
	img, err := build(options{binary: bin, version: "v0.1.0", commit: "0123456789abcdef0123456789abcdef01234567",
		date: "2026-12-01T10:00:00Z", libs: []string{lib}})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if err := writeArchive(img, "covmirror/covmirror:v0.1.0", "2026-12-01T10:00:00Z", out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchiveIsReproducible: two builds of the same inputs give the same
// bytes, and the archive reads back as an OCI layout whose image runs
// covmirror as the non-root user, named covmirror/covmirror:VERSION.
func TestArchiveIsReproducible(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	a, _ := os.ReadFile(buildArchive(t, src, dir, "a.tar"))
	b, _ := os.ReadFile(buildArchive(t, src, dir, "b.tar"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("two builds of the same image differ (%d and %d bytes)", len(a), len(b))
	}
	img, ref := readArchive(t, filepath.Join(dir, "a.tar"))
	if ref != "covmirror/covmirror:v0.1.0" {
		t.Errorf("ref.name %q, want covmirror/covmirror:v0.1.0", ref)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != binaryPath ||
		cf.Config.Labels["org.opencontainers.image.version"] != "v0.1.0" || cf.Created.UTC().Format("2006-01-02T15:04:05Z") != "2026-12-01T10:00:00Z" {
		t.Errorf("config %+v", cf.Config)
	}
	root := t.TempDir()
	extract(t, img, root)
	for _, want := range []string{"usr/local/bin/covmirror", "etc/passwd", "var/lib/covmirror", "tmp"} {
		if _, err := os.Stat(filepath.Join(root, want)); err != nil {
			t.Errorf("the image lacks /%s: %v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, src, "libfake.so.1")); err != nil {
		t.Errorf("the image lacks the library it was given at its path: %v", err)
	}
}

// readArchive unpacks an OCI archive and returns its one image and its
// ref.name annotation.
func readArchive(t *testing.T, archive string) (v1.Image, string) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("archive entry %q escapes the directory", h.Name)
		}
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(os.MkdirAll(filepath.Dir(p), 0o755), os.WriteFile(p, data, 0o644)); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index %+v, %v: want one image", m, err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img, m.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
}

// extract writes img's filesystem under root, with modes and owners.
func extract(t *testing.T, img v1.Image, root string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("layer entry %q escapes the root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(os.MkdirAll(filepath.Dir(p), 0o755), os.WriteFile(p, data, 0o600)); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("layer entry %q of type %c: the image holds files and directories only", h.Name, h.Typeflag)
		}
		if err := os.Chmod(p, os.FileMode(h.Mode&0o777)|modeBits(h.Mode)); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func modeBits(m int64) os.FileMode {
	var f os.FileMode
	if m&0o1000 != 0 {
		f |= os.ModeSticky
	}
	return f
}
