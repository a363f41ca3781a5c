package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	sqlcat "github.com/apache/iceberg-go/catalog/sql"

	"github.com/covmirror/covmirror/internal/redact"
)

// TestOpenCatalogNeverPrintsTheURIsPassword: a catalog that cannot be
// opened is named by its uri's scheme, host and path only. A password may
// hold a ' (a valid character of a URL's user information, which pgx
// takes), a space or a " (which no URL parser takes): none is printed,
// whole or in part, nor a key or token in the uri's query.
func TestOpenCatalogNeverPrintsTheURIsPassword(t *testing.T) {
	const pw = "Sup3rS3cretPw"
	for _, uri := range []string{
		"postgres://u:" + pw + "'x@127.0.0.1:1/db",
		"postgres://u:" + pw + " x@127.0.0.1:1/db",
		"postgres://u:" + pw + "\"x@127.0.0.1:1/db",
		"postgres://u@127.0.0.1:1/db?sslpassword=" + pw,
	} {
		props := map[string]string{"type": "sql", "uri": uri, sqlcat.DriverKey: "pgx", sqlcat.DialectKey: "postgres",
			"warehouse": "file://" + t.TempDir(), "init_catalog_tables": "true"}
		_, err := OpenCatalog(context.Background(), "", props)
		if err == nil {
			t.Fatalf("uri %q: opened", uri)
		}
		if strings.Contains(err.Error(), pw[:8]) {
			t.Errorf("uri %q: the password is in the error: %v", uri, err)
		}
	}
}

// TestOpenCatalogNeverPrintsAHeaderValue: a REST catalog's header.*
// properties are sent as request headers, often a credential under a name
// no shape knows (header.X-Vendor-Auth); a catalog that echoes its
// request's headers in its error never gets one printed.
func TestOpenCatalogNeverPrintsAHeaderValue(t *testing.T) {
	const secret = "Zq81fa77HeaderSecretValue"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg := fmt.Sprintf("refused: %v", r.Header)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestException", "code": 400}})
	}))
	defer srv.Close()
	props := map[string]string{"type": "rest", "uri": srv.URL, "header.X-Vendor-Auth": secret, "warehouse": "wh"}
	_, err := OpenCatalog(context.Background(), "", props)
	if err == nil {
		t.Fatal("opened a catalog that refuses every request")
	}
	if !strings.Contains(err.Error(), "refused") {
		t.Fatalf("the catalog's answer is not in the error, so the test shows nothing: %v", err)
	}
	if strings.Contains(err.Error(), secret[:8]) {
		t.Errorf("the header's value is in the error: %v", err)
	}
}

// TestPropSecretsByKeyAndUserName: header.* values and an http(s) uri's
// user name alone (a token) are secrets; a database uri's user name is its
// role, left for its errors to name.
func TestPropSecretsByKeyAndUserName(t *testing.T) {
	got := propSecrets(map[string]string{"uri": "https://Zq81tokenValue@catalog/v1", "header.X-Vendor": "Zq81headerValue", "warehouse": "wh"})
	for _, want := range []string{"Zq81tokenValue", "Zq81headerValue"} {
		if !slices.Contains(got, want) {
			t.Errorf("propSecrets = %q; want %q among them", got, want)
		}
	}
	if got := propSecrets(map[string]string{"uri": "postgres://postgres@db/lake"}); slices.Contains(got, "postgres") {
		t.Errorf("a database uri's role is a secret: %q", got)
	}
}

// TestOpenCatalogNeverPrintsAnotherPropertysURLPassword: any property may
// be a URL with a password (warehouse=s3://KEY:SECRET@bucket/), and a REST
// catalog sends the warehouse in its config request's query, which a
// catalog's error may echo percent-encoded, where no shape finds it.
func TestOpenCatalogNeverPrintsAnotherPropertysURLPassword(t *testing.T) {
	const secret = "Zq81WarehouseSecret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg := "refused: " + r.URL.RequestURI()
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestException", "code": 400}})
	}))
	defer srv.Close()
	for _, wh := range []string{"s3://AKIAKEY:" + secret + "@bucket/wh", "s3://AKIAKEY:" + secret + "/+x@bucket/wh", "https://" + secret + "@store/wh"} {
		props := map[string]string{"type": "rest", "uri": srv.URL, "warehouse": wh}
		_, err := OpenCatalog(context.Background(), "", props)
		if err == nil {
			t.Fatal("opened a catalog that refuses every request")
		}
		if !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "warehouse") {
			t.Fatalf("the catalog's echo is not in the error, so the test shows nothing: %v", err)
		}
		if strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("warehouse %q: its password is in the error: %v", wh, err)
		}
	}
}

// TestOpenedCatalogsErrorsNeverPrintAHeaderValue: a REST catalog that
// opens (its config answered) and then echoes its requests' headers in
// every error: the table's errors, as every output prints an error
// (redact.Error, with no secrets named: the CLI's last word, the logger,
// the sidecar's 5xx), never show a header.* value, which only the
// catalog's properties tell from any other text.
func TestOpenedCatalogsErrorsNeverPrintAHeaderValue(t *testing.T) {
	const secret = "Zq81OpenedHeaderSecret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/config" {
			_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		msg := fmt.Sprintf("refused %s: %v", r.URL.Path, r.Header)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestException", "code": 400}})
	}))
	defer srv.Close()
	props := map[string]string{"type": "rest", "uri": srv.URL, "header.X-Vendor-Auth": secret}
	cat, err := OpenCatalog(context.Background(), "", props)
	if err != nil {
		t.Fatalf("the catalog does not open: %v", err)
	}
	_, err = Open(context.Background(), cat, Options{Namespace: []string{"covmirror"}, Name: "coverage"})
	if err == nil {
		t.Fatal("opened a table in a catalog that refuses every request")
	}
	if !strings.Contains(err.Error(), "refused") {
		t.Fatalf("the catalog's echo is not in the error, so the test shows nothing: %v", err)
	}
	if got := redact.Error(err).Error(); strings.Contains(got, secret[:8]) {
		t.Errorf("the header's value is in the error as printed: %s", got)
	}
}

// TestRememberedSecretsLeaveAnAccessKeyID: an S3 access key's id is a name
// (often the deployment's, a word of every message), not remembered for
// the process's outputs; its secret key is.
func TestRememberedSecretsLeaveAnAccessKeyID(t *testing.T) {
	got := rememberedSecrets(map[string]string{"s3.access-key-id": "covmirror", "s3.secret-access-key": "Zq81secretKey"})
	if slices.Contains(got, "covmirror") || !slices.Contains(got, "Zq81secretKey") {
		t.Errorf("rememberedSecrets = %q; want the secret key and not the key id", got)
	}
}
