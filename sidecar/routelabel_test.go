package sidecar

import (
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// A request's route label in covmirror_sidecar_requests_total names the
// route it was for, one label per route whatever answered: a GET of
// /v1/extents is not counted as "PUT /v1/extents", a POST of /v1/gaps or
// /v1/plan not as their GET, and the guard's refusal of /v1/extents,
// /v1/plan or /v1/committed uses the same label as the handler's answer
// (now the guard says "/v1/extents" where the handler says
// "PUT /v1/extents", splitting one route's series in two).
func TestRequestRouteLabelNamesTheMethod(t *testing.T) {
	p := newPod(t, nil)
	get := apiRequest(http.MethodGet, "/v1/extents", nil)
	p.h.ServeHTTP(httptest.NewRecorder(), get)
	if n := count(t, p, "PUT /v1/extents", "200"); n != 0 {
		t.Errorf("a GET /v1/extents answered 200 was counted as route \"PUT /v1/extents\" (%v)", n)
	}
	refused := apiRequest(http.MethodGet, "/v1/extents", nil)
	refused.Header.Set("Origin", "http://evil.test")
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, refused)
	if rec.Code != http.StatusForbidden {
		t.Fatalf("a foreign Origin: %d, want 403", rec.Code)
	}
	if n := count(t, p, "/v1/extents", "403"); n != 0 {
		t.Errorf("the guard's refusal of /v1/extents is counted under route \"/v1/extents\", the handler's answers under another label")
	}
}

func count(t *testing.T, p *pod, route, code string) float64 {
	t.Helper()
	var m dto.Metric
	if err := p.srv.counters.requests.WithLabelValues(route, code).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
