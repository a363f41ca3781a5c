package benthos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/covmirror/covmirror/recovery"
)

// sidecarPlan asks a running pod for the plan: POST /v1/plan with the
// extents as the body. A plan the pod cut to its task limit comes with
// recovery.ErrPlanTruncated.
func sidecarPlan(ctx context.Context, s sidecarSettings, opts recovery.PlanOptions) ([]recovery.Gap, error) {
	base, client, err := sidecarHTTP(s)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if opts.Reference != "" {
		q.Set("reference", opts.Reference)
	}
	if opts.MaxBatches > 0 {
		q.Set("max_batches", strconv.FormatUint(opts.MaxBatches, 10))
	}
	if len(opts.Sinks) > 0 {
		q.Set("sinks", strings.Join(opts.Sinks, ","))
	}
	body, err := json.Marshal(opts.Extents)
	if err != nil {
		return nil, err
	}
	if len(opts.Extents) == 0 {
		body = []byte("[]")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/plan?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("sidecar.address: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST /v1/plan: %w (is `covmirror serve` running there?)", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("POST /v1/plan: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var apiErr struct{ Error, Rule string }
		if json.Unmarshal(data, &apiErr) == nil && apiErr.Error != "" {
			return nil, fmt.Errorf("POST /v1/plan: %s: %s (rule %s)", resp.Status, apiErr.Error, apiErr.Rule)
		}
		return nil, fmt.Errorf("POST /v1/plan: %s", resp.Status)
	}
	var gaps []recovery.Gap
	if err := json.Unmarshal(data, &gaps); err != nil {
		return nil, fmt.Errorf("POST /v1/plan: the answer is not a plan: %w", err)
	}
	if t := resp.Header.Get("Covmirror-Plan-Truncated"); t != "" {
		return gaps, fmt.Errorf("%w: %s", recovery.ErrPlanTruncated, t)
	}
	return gaps, nil
}

// sidecarHTTP is the record API's base URL and a client for it: TCP, or
// the Unix socket (whose requests name localhost).
func sidecarHTTP(s sidecarSettings) (string, *http.Client, error) {
	if s.socket != "" {
		d := net.Dialer{Timeout: 10 * time.Second}
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", s.socket)
		}}
		return "http://localhost", &http.Client{Transport: tr, Timeout: time.Minute}, nil
	}
	base := s.address
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", nil, fmt.Errorf("covmirror: sidecar.address %q: give HOST:PORT or http://HOST:PORT", s.address)
	}
	return u.Scheme + "://" + u.Host, &http.Client{Timeout: time.Minute}, nil
}
