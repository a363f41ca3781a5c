package tier

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
)

// ExplainWriteFailure adds to a failed write into the coverage table
// (t, when it is the table) what a local warehouse says when asked
// directly: the library may report only its consequence (a data file with
// no rows), not that the directory refused the write. Other tiers' errors
// pass through.
func ExplainWriteFailure(ctx context.Context, t durable.Tier, err error) error {
	table, _ := t.(*iceberg.Table)
	if err == nil || table == nil || errors.Is(err, context.Canceled) {
		return err
	}
	tbl, loadErr := table.Load(ctx)
	if loadErr != nil {
		return err
	}
	dir, ok := localDir(tbl.Location())
	if !ok {
		return err
	}
	dir = filepath.Join(dir, "data")
	// The nearest existing directory is where the writer would create one.
	for {
		if _, statErr := os.Lstat(dir); statErr == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	probe, probeErr := os.CreateTemp(dir, ".covmirror-write-probe-*")
	if probeErr == nil {
		_ = probe.Close()
		_ = os.Remove(probe.Name())
		return err
	}
	return fmt.Errorf("%w; the cause: the warehouse directory %s refuses new files (%v): make it writable for this process (owner, mode, a read-only mount), then retry; the local tier keeps everything pending", err, dir, probeErr)
}

// localDir is a location's local directory, if it is a file: URL or a path.
func localDir(location string) (string, bool) {
	if strings.HasPrefix(location, "/") {
		return location, true
	}
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	return u.Path, true
}
