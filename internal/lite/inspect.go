package lite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/covmirror/covmirror/internal/token"
	"github.com/covmirror/covmirror/local"
)

// Inspect runs inspect: the local tier's diagnostics, read offline from
// localDir or from a running pod's --url.
func Inspect(ctx context.Context, sh *Shell, localDir string, args []string) error {
	fs := sh.Flags("inspect", "[--json] [--url URL [--token-file PATH]]")
	asJSON := fs.Bool("json", false, "print the diagnostics as JSON")
	url := fs.String("url", "", "a running pod's diagnostics handler; without it the local tier under --state is opened (which fails while a pod holds it)")
	if err := sh.Parse(fs, args); err != nil {
		return err
	}
	var diag local.Diagnostics
	if *url != "" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
		if err != nil {
			return UsageError{fmt.Errorf("inspect: --url: %w", err)}
		}
		if err := Authorize(req, sh.Set.String("token-file")); err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return fmt.Errorf("inspect: %s answered %s: %s", *url, resp.Status, body)
		}
		if err := json.NewDecoder(resp.Body).Decode(&diag); err != nil {
			return fmt.Errorf("inspect: decoding %s: %w", *url, err)
		}
	} else {
		store, err := local.Open(local.Options{Dir: localDir, Logger: sh.Logger})
		if err != nil {
			return err
		}
		diag, err = store.Diagnostics(ctx)
		if closeErr := store.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(sh.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(diag)
	}
	fmt.Fprintf(sh.Stdout, "local tier %s: %d destinations, %d batches pending in %d ranges, last checkpoint %d\n",
		diag.Dir, len(diag.Destinations), diag.PendingBatches, diag.PendingRanges, diag.LastCheckpointID)
	for _, d := range diag.Destinations {
		fmt.Fprintf(sh.Stdout, "  %s: covered %v, gaps vs %s %v, pending %v\n", d.Destination, d.Covered, diag.Reference, d.Gaps, d.Pending)
	}
	return nil
}

// ReadToken reads a token file; an unusable one is a usage error.
func ReadToken(path string) (string, error) {
	tok, err := token.ReadFile(path)
	if err != nil {
		return "", UsageError{fmt.Errorf("--token-file: %w", err)}
	}
	return tok, nil
}

// Authorize adds the token of tokenFile, if any, to a request to a
// running pod.
func Authorize(req *http.Request, tokenFile string) error {
	if tokenFile == "" {
		return nil
	}
	tok, err := ReadToken(tokenFile)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}
