package charttest

import (
	"strings"
	"testing"
)

// TestNoInlineCatalogCredential: catalog properties and settings that the
// durable tier's libraries read as credentials, under names the first
// check missed, are refused too, and the refusal does not repeat them. A
// header.NAME catalog property is a header of every REST catalog request
// (iceberg-go), so header.Authorization is a bearer token; gcs.jsonkey and
// adls.auth.shared-key.account.key are keys; a URL with a password in it
// (a SQL catalog's uri) is a password.
func TestNoInlineCatalogCredential(t *testing.T) {
	ch := loadChart(t)
	const secret = "hunter2-c7d3"
	for _, vals := range []string{
		"config: {catalog: {type: rest, uri: 'http://cat:8181', header.Authorization: 'Bearer " + secret + "'}}",
		"config: {catalog: {type: rest, uri: 'http://cat:8181', header.X-Api-Key: '" + secret + "'}}",
		"config: {catalog: {type: sql, uri: 'postgres://lake:" + secret + "@db:5432/lake'}}",
		"config: {catalog: {type: rest, uri: 'http://cat:8181', gcs.jsonkey: '{\"private_key\":\"" + secret + "\"}'}}",
		"config: {catalog: {type: rest, uri: 'http://cat:8181', adls.auth.shared-key.account.key: '" + secret + "'}}",
		"config: {settings: {object.s3.secret_access_key: " + secret + "}}",
		"config: {settings: {object.s3.endpoint: 'https://key:" + secret + "@minio:9000'}}",
	} {
		_, err := render(t, ch, parse(t, vals))
		if err == nil {
			t.Errorf("values %s rendered: an inline credential must be refused", vals)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("values %s: the error repeats the credential: %v", vals, err)
		}
	}
	// What is not a credential still renders.
	for _, vals := range []string{
		"config: {catalog: {type: sql, uri: 'postgres://lake@db:5432/lake', sql.driver: pgx}}",
		"config: {catalog: {type: rest, uri: 'http://cat:8181', warehouse: 's3://lake@2026/w', gcs.keypath: /var/run/gcs/key.json}}",
		"config: {settings: {object.url: 's3://lake/covmirror', object.s3.endpoint: 'http://minio:9000'}}",
	} {
		if _, err := render(t, ch, parse(t, vals)); err != nil {
			t.Errorf("values %s: %v", vals, err)
		}
	}
}
