package sidecar

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// GET /v1/extents "lists them" (docs/sidecar-api.md): with none reported yet the list
// is empty, [], as every other list route answers, not JSON null, which a
// client iterating the answer (the Python client's `for e in ...`) fails on.
func TestExtentsEmptyIsAnEmptyList(t *testing.T) {
	p := newPod(t, nil)
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, apiRequest(http.MethodGet, "/v1/extents", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/extents: %d %s", rec.Code, rec.Body)
	}
	if got := strings.TrimSpace(rec.Body.String()); got != "[]" {
		t.Fatalf("GET /v1/extents with none reported: %s, want []", got)
	}
}
