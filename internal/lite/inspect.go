package lite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

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
		var err error
		if diag, err = fetchDiagnostics(ctx, *url, sh.Set.String("token-file")); err != nil {
			return err
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

// inspectTimeout bounds a whole inspect --url exchange: the pod's server
// writes an answer within 60s (sidecar's WriteTimeout), so one not in by
// then is not coming, and a per-batch command must not wait forever.
var inspectTimeout = 90 * time.Second

// maxDiagnosticsBody bounds the answer inspect --url reads: a server that is
// not a pod's debug handler must not fill the memory.
const maxDiagnosticsBody = 64 << 20

// fetchDiagnostics reads a running pod's diagnostics from its debug handler
// at rawURL, sending tokenFile's token if given. Nothing the server answers
// is printed with the token or the URL's password in it.
func fetchDiagnostics(ctx context.Context, rawURL, tokenFile string) (local.Diagnostics, error) {
	var diag local.Diagnostics
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return diag, UsageError{fmt.Errorf("inspect: --url: %w", err)}
	}
	if err := Authorize(req, tokenFile); err != nil {
		return diag, err
	}
	where := req.URL.Redacted()
	// A redirect is no answer of the debug handler, and Go's client keeps
	// the Authorization header on a redirect to another port of the same
	// host, any local user's listener: none is followed.
	client := &http.Client{Timeout: inspectTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return diag, fmt.Errorf("inspect: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		text := strings.TrimSpace(string(body))
		if tok := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "); tok != "" {
			text = strings.ReplaceAll(text, tok, "[token]") // an address that is not the pod may echo the request
		}
		if loc := resp.Header.Get("Location"); loc != "" {
			text = fmt.Sprintf("a redirect to %q, not followed (it could carry the token elsewhere): give the pod's own address as --url", loc)
		}
		return diag, fmt.Errorf("inspect: %s answered %s: %s", where, resp.Status, text)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiagnosticsBody+1))
	if err != nil {
		return diag, fmt.Errorf("inspect: --url: reading %s: %w", where, err)
	}
	if len(body) > maxDiagnosticsBody {
		return diag, fmt.Errorf("inspect: %s answered larger than %d MiB, inspect's limit: is --url a pod's /debug/coverage?", where, maxDiagnosticsBody>>20)
	}
	if err := json.Unmarshal(body, &diag); err != nil {
		return diag, fmt.Errorf("inspect: decoding %s (is --url a pod's /debug/coverage?): %w", where, err)
	}
	return diag, nil
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
