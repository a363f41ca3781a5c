package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user, and where things are.
const (
	uid        = 65532
	binaryPath = "/usr/local/bin/covmirror"
	stateDir   = "/var/lib/covmirror"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
)

// file is one entry of the layer.
type file struct {
	name     string // absolute, cleaned
	mode     int64
	uid      int
	dir      bool
	data     []byte
	hostPath string // read at write time when data is nil
}

// options are what build takes.
type options struct {
	binary, version, commit, date string
	// libs are the shared libraries to copy (host paths, kept at the same
	// path in the image); from ldd of the binary when nil.
	libs []string
	// caFile is the CA bundle copied to caPath ("" leaves it out).
	caFile string
}

// lddLine matches "libx.so => /path (0x...)" and "/lib64/ld-linux... (0x...)".
var lddLine = regexp.MustCompile(`^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)`)

// sharedLibraries lists the libraries binary links, by ldd; a statically
// linked binary links none.
func sharedLibraries(binary string) ([]string, error) {
	out, err := exec.Command("ldd", binary).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") || strings.Contains(string(out), "statically linked") {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %q (the image needs every library the binary links): %w: %s", binary, err, out)
	}
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "not found") {
			return nil, fmt.Errorf("ldd %q: a library is missing on this machine: %s", binary, sc.Text())
		}
		if m := lddLine.FindStringSubmatch(sc.Text()); m != nil {
			libs = append(libs, m[1])
		}
	}
	return libs, nil
}

// files are the layer's entries, sorted by name, with every parent
// directory.
func files(o options) ([]file, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\ncovmirror:x:%d:%d:covmirror:%s:/sbin/nologin\n", uid, uid, stateDir)
	group := fmt.Sprintf("root:x:0:\ncovmirror:x:%d:\n", uid)
	fs := []file{
		{name: binaryPath, mode: 0o755, hostPath: o.binary},
		{name: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "/etc/group", mode: 0o644, data: []byte(group)},
		// Go's and libc's resolvers read it: hosts from /etc/hosts, then DNS.
		{name: "/etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "/tmp", mode: 0o1777, dir: true},
		{name: stateDir, mode: 0o750, dir: true, uid: uid},
		{name: "/root", mode: 0o700, dir: true},
	}
	if o.caFile != "" {
		fs = append(fs, file{name: caPath, mode: 0o644, hostPath: o.caFile})
	}
	for _, lib := range o.libs {
		// The real file under the name the loader looks for (ldd's),
		// whatever symlinks lead to it on this machine.
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return nil, fmt.Errorf("resolving the library %q: %w", lib, err)
		}
		fs = append(fs, file{name: path.Clean(lib), mode: 0o755, hostPath: real})
	}
	seen := map[string]bool{}
	for _, f := range fs {
		seen[f.name] = true
	}
	for _, f := range fs {
		for d := path.Dir(f.name); d != "/"; d = path.Dir(d) {
			if !seen[d] {
				seen[d] = true
				fs = append(fs, file{name: d, mode: 0o755, dir: true})
			}
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].name < fs[j].name })
	return fs, nil
}

// layerTar writes fs as a tar stream whose every time is at.
func layerTar(w io.Writer, fs []file, at time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range fs {
		h := &tar.Header{Name: strings.TrimPrefix(f.name, "/"), Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: at, Format: tar.FormatPAX}
		data := f.data
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			if data == nil {
				var err error
				if data, err = os.ReadFile(f.hostPath); err != nil {
					return fmt.Errorf("reading %q for the image: %w", f.hostPath, err)
				}
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
	return tw.Close()
}

// build is the image.
func build(o options) (v1.Image, error) {
	at, err := time.Parse(time.RFC3339, o.date)
	if err != nil {
		return nil, fmt.Errorf("-date %q: want RFC 3339 (the commit's time, git log -1 --format=%%cI): %w", o.date, err)
	}
	at = at.UTC()
	fs, err := files(o)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := layerTar(&buf, fs, at); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: at}
	cf.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	cf.Config.Entrypoint = []string{binaryPath}
	cf.Config.Cmd = []string{"serve"}
	cf.Config.WorkingDir = stateDir
	cf.Config.Env = []string{"PATH=/usr/local/bin", "HOME=" + stateDir, "SSL_CERT_FILE=" + caPath}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "covmirror",
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.commit,
		"org.opencontainers.image.created":  at.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.source":   "https://github.com/covmirror/covmirror",
	}
	cf.History = []v1.History{{Created: v1.Time{Time: at}, CreatedBy: "make image (internal/image)", Comment: "covmirror, its shared libraries, CA certificates, user covmirror"}}
	return mutate.ConfigFile(img, cf)
}
