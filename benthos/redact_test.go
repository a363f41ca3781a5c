package benthos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"
)

// TestConnectErrorNeverLogsACatalogsHeaderValue: a pod whose REST catalog
// opens and then echoes its requests' headers in every error: the output's
// failed Connect, which Benthos logs as it is, never shows a header.*
// value of pod.catalog.
func TestConnectErrorNeverLogsACatalogsHeaderValue(t *testing.T) {
	const secret = "Bn5xCatalogHeaderSecret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/config" {
			_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		msg := fmt.Sprintf("refused %s: %v", r.URL.Path, r.Header)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "ServerError", "code": 500}})
	}))
	defer srv.Close()
	out := covmirrorOutput("lake", false, t.TempDir(), obj{"drop": obj{}})
	out["covmirror"].(obj)["pod"].(obj)["catalog"] = obj{"type": "rest", "uri": srv.URL, "header.X-Vendor-Auth": secret}
	yaml := stream(t, generate(1, 1), out)
	b := env(t).NewStreamBuilder()
	if err := b.SetYAML(yaml); err != nil {
		t.Fatal(err)
	}
	logs := new(logtest.Buffer)
	b.SetLogger(slog.New(slog.NewTextHandler(logs, nil)))
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = s.Run(ctx)
	if !strings.Contains(logs.String(), "refused") {
		t.Fatalf("the catalog's echo is not in the logs, so the test shows nothing:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret[:8]) {
		t.Errorf("the header's value is in the logs:\n%s", logs.String())
	}
}
