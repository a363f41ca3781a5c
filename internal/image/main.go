package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("image", flag.ContinueOnError)
	var o options
	fl.StringVar(&o.binary, "binary", "", "the covmirror binary for linux/amd64 (make release's)")
	fl.StringVar(&o.version, "version", "", "the version: the image's tag and label")
	fl.StringVar(&o.commit, "commit", "", "the commit: the revision label")
	fl.StringVar(&o.date, "date", "", "the commit's time in RFC 3339: every time in the image")
	fl.StringVar(&o.caFile, "ca", caPath, "the CA certificate bundle to copy (empty: none)")
	out := fl.String("out", "dist/covmirror-image.tar", "the OCI archive to write")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if o.binary == "" || o.version == "" || o.date == "" {
		return errors.New("-binary, -version and -date are required")
	}
	libs, err := sharedLibraries(o.binary)
	if err != nil {
		return err
	}
	o.libs = libs
	img, err := build(o)
	if err != nil {
		return err
	}
	return writeArchive(img, "covmirror/covmirror:"+o.version, o.date, *out)
}

// writeArchive writes img as an OCI image layout (go-containerregistry's
// layout) and packs it in one tar at out, entries in name order with every
// time at date, so that the same image gives the same bytes.
func writeArchive(img v1.Image, ref, date, out string) error {
	dir, err := os.MkdirTemp("", "covmirror-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref, // what skopeo and podman load it as
	})); err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}
	at, _ := time.Parse(time.RFC3339, date)
	var names []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			names = append(names, p)
		}
		return err
	}); err != nil {
		return err
	}
	sort.Strings(names)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("creating the archive: %w", err)
	}
	tw := tar.NewWriter(f)
	for _, name := range names {
		rel, _ := filepath.Rel(dir, name)
		st, err := os.Stat(name)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: at.UTC(), Format: tar.FormatPAX}
		var data []byte
		if st.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		} else {
			if data, err = os.ReadFile(name); err != nil {
				return err
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		return fmt.Errorf("writing the archive %q: %w", out, err)
	}
	return nil
}
