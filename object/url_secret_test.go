package object

import (
	"strings"
	"testing"
)

// TestLocationAndEndpointErrorsNeverEchoACredential: an object URL or an
// S3 endpoint with a key in its user information, its query or its
// fragment, parsable or not, is refused by an error that names it by its
// scheme and host at most; an endpoint with user information is refused
// (the SDK's own errors would quote it).
func TestLocationAndEndpointErrorsNeverEchoACredential(t *testing.T) {
	const secret = "Zq81fa77SecretKey"
	for _, raw := range []string{
		"s3://AKIAEXAMPLE:" + secret + "@bucket/prefix/",
		"s3://" + secret + "@bucket/prefix/",
		"s3://bucket/prefix/?X-Amz-Credential=" + secret,
		"s3://bucket/prefix/#" + secret,
		"s3://AKIAEXAMPLE:" + secret + "%zz@bucket/prefix/",
		"s3://AKIAEXAMPLE:" + secret + "/x@bucket/prefix/",
		"ftp://AKIAEXAMPLE:" + secret + "@bucket/prefix/",
	} {
		_, err := ParseURL(raw)
		if err == nil {
			t.Errorf("%q was taken", raw)
			continue
		}
		if strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("ParseURL(%q): %v", raw, err)
		}
	}
	for _, ep := range []string{
		"https://AKIAEXAMPLE:" + secret + "@minio:9000",
		"https://" + secret + "@minio:9000",
		"ftp://AKIAEXAMPLE:" + secret + "@minio:9000",
		"http://AKIAEXAMPLE:" + secret + "%zz@minio:9000",
		"minio:9000/?token=" + secret,
	} {
		err := (&S3Options{Bucket: "b", Endpoint: ep}).Validate()
		if err == nil {
			t.Errorf("endpoint %q was taken", ep)
			continue
		}
		if strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("endpoint %q: %v", ep, err)
		}
	}
}
