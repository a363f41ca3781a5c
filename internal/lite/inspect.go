package lite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/redact"
	"github.com/covmirror/covmirror/internal/token"
	"github.com/covmirror/covmirror/local"
)

// Inspect runs inspect: the local tier's diagnostics, read offline from
// localDir or from a running pod's --url.
func Inspect(ctx context.Context, sh *Shell, localDir string, args []string) error {
	fs := sh.Flags("inspect", "[--json] [--url URL [--token-file PATH]]")
	asJSON := fs.Bool("json", false, "print the diagnostics as JSON")
	diagURL := fs.String("url", "", "a running pod's diagnostics handler; without it the local tier under --state is opened (which fails while a pod holds it)")
	if err := sh.Parse(fs, args); err != nil {
		return err
	}
	var diag local.Diagnostics
	var secrets []string // what an answer of --url may echo
	if *diagURL != "" {
		var err error
		if diag, secrets, err = fetchDiagnostics(ctx, *diagURL, sh.Set.String("token-file")); err != nil {
			return err
		}
	} else {
		// Opening creates a store: a mistyped --state would show an empty
		// local tier of zero destinations instead of the pod's.
		if _, err := os.Stat(localDir); errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("inspect: no local tier at %q: give the --state of a pod (its local tier is the local directory under it), or --url of a running pod", localDir)
		}
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
	// What is printed is redacted whole: with --url an address that is not
	// the pod may answer diagnostics echoing the request (its token, the
	// URL's password) in any of their texts.
	var out bytes.Buffer
	if *asJSON {
		enc := json.NewEncoder(&out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(diag); err != nil {
			return err
		}
	} else {
		printDiagnostics(&out, diag)
	}
	_, err := io.WriteString(sh.Stdout, redact.Text(out.String(), false, secrets...))
	return err
}

// printDiagnostics prints diag as inspect's table. Every text is quoted
// where it could hold a control character: with --url it is a server's
// text, whose control characters would act on the terminal or forge a
// line.
func printDiagnostics(w io.Writer, diag local.Diagnostics) {
	fmt.Fprintf(w, "local tier %q: %d destinations, %d batches pending in %d ranges, last checkpoint %d\n",
		diag.Dir, len(diag.Destinations), diag.PendingBatches, diag.PendingRanges, diag.LastCheckpointID)
	for _, d := range diag.Destinations {
		fmt.Fprintf(w, "  %s: covered %v, gaps vs %q %v, pending %v\n", d.Destination, d.Covered, diag.Reference, d.Gaps, d.Pending)
	}
	// Gap states are decisions, never coverage: listed apart, the reason
	// and who quoted (a pipeline's or an operator's text).
	for _, st := range diag.States {
		shipped := "pending"
		if st.Shipped {
			shipped = "shipped"
		}
		fmt.Fprintf(w, "  state %s %s %v by %q at %s (%s): %q\n", coverage.QuoteName(string(st.State)), st.Destination, st.Range, st.By, st.At.UTC().Format(time.RFC3339), shipped, st.Reason)
	}
}

// inspectTimeout bounds a whole inspect --url exchange: the pod's server
// writes an answer within 60s (sidecar's WriteTimeout), so one not in by
// then is not coming, and a per-batch command must not wait forever.
var inspectTimeout = 90 * time.Second

// maxDiagnosticsBody bounds the answer inspect --url reads: a server that is
// not a pod's debug handler must not fill the memory.
const maxDiagnosticsBody = 64 << 20

// maxErrorAnswer bounds what inspect reads and prints of an error answer:
// enough to tell a proxy's page from the pod's error.
const maxErrorAnswer = 4096

// fetchDiagnostics reads a running pod's diagnostics from its debug handler
// at rawURL, sending tokenFile's token if given. Nothing inspect prints of
// the URL or of what the server answers carries the token or the URL's
// password, whole or in part: every text is redacted (internal/redact)
// before it is cut, and the secrets returned are those the caller's
// printing of the diagnostics redacts.
func fetchDiagnostics(ctx context.Context, rawURL, tokenFile string) (local.Diagnostics, []string, error) {
	var diag local.Diagnostics
	where := redact.URL(rawURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err == nil && redact.StrayAt(rawURL) {
		return diag, nil, UsageError{fmt.Errorf("inspect: --url %s has an @ after its host: a password holding /, ? or # must have it percent-encoded (%%2F, %%3F, %%23), or the password is sent and printed as the URL's path", where)}
	}
	if err != nil {
		// url.Parse's error quotes the URL whole, its password included.
		return diag, nil, UsageError{fmt.Errorf("inspect: --url %s is not a URL: give the pod's http://HOST:PORT/debug/coverage (a %% in a password is written %%25)", where)}
	}
	if err := Authorize(req, tokenFile); err != nil {
		return diag, nil, err
	}
	secrets := []string{strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")}
	if pw, ok := req.URL.User.Password(); ok {
		secrets = append(secrets, pw, url.PathEscape(pw), url.QueryEscape(pw))
	}
	// A redirect is no answer of the debug handler, and Go's client keeps
	// the Authorization header on a redirect to another port of the same
	// host, any local user's listener: none is followed.
	client := &http.Client{Timeout: inspectTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return diag, secrets, fmt.Errorf("inspect: %w", redact.Error(err, secrets...))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorAnswer+1))
		cut := len(body) > maxErrorAnswer
		// An address that is not the pod may echo the request: redacted
		// before it is cut, so that no cut leaves a piece of the token.
		// Quoted: a line break or a terminal's escape in it must not act.
		text := strconv.Quote(strings.TrimSpace(redact.Bounded(string(body[:min(len(body), maxErrorAnswer)]), maxErrorAnswer, cut, secrets...)))
		if loc := resp.Header.Get("Location"); loc != "" {
			text = fmt.Sprintf("a redirect to %q, not followed (it could carry the token elsewhere): give the pod's own address as --url", redact.URL(loc))
		}
		return diag, secrets, fmt.Errorf("inspect: %s answered %s: %s", where, redact.Status(resp.Status), text)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiagnosticsBody+1))
	if err != nil {
		return diag, secrets, fmt.Errorf("inspect: --url: reading %s: %w", where, redact.Error(err, secrets...))
	}
	if len(body) > maxDiagnosticsBody {
		return diag, secrets, fmt.Errorf("inspect: %s answered larger than %d MiB, inspect's limit: is --url a pod's /debug/coverage?", where, maxDiagnosticsBody>>20)
	}
	if err := json.Unmarshal(body, &diag); err != nil {
		return diag, secrets, fmt.Errorf("inspect: decoding %s (is --url a pod's /debug/coverage?): %w", where, redact.Error(err, secrets...))
	}
	return diag, secrets, nil
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
