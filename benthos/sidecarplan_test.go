package benthos

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/recovery"
)

// TestSidecarPlanErrors: a refused plan request is an error with the
// server's rule and never the token; a bad address is named.
func TestSidecarPlanErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"missing or wrong bearer token","rule":"token"}`))
	}))
	defer srv.Close()
	const token = "a-token-nobody-may-see-1234"
	_, err := sidecarPlan(context.Background(), sidecarSettings{address: srv.URL, token: token}, recovery.PlanOptions{}, nil)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "token") || strings.Contains(err.Error(), token) {
		t.Fatalf("a refused request: %v", err)
	}
	t.Log(err)
	for _, addr := range []string{"ftp://x:1", "http://", "::"} {
		if _, err := sidecarPlan(context.Background(), sidecarSettings{address: addr}, recovery.PlanOptions{}, nil); err == nil || !strings.Contains(err.Error(), "sidecar") {
			t.Errorf("address %q: %v, want an error naming the sidecar", addr, err)
		}
	}
}
