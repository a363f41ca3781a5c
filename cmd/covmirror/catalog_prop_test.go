package main

import (
	"strings"
	"testing"
)

// TestAMalformedCatalogPropertyIsNotEchoed: a catalog property that is not
// key=value may be a credential pasted wrong (a space for the =), or the
// part of one after a comma in COVMIRROR_CATALOG_PROPS, which separates
// entries by commas: the refusal names no piece of it.
func TestAMalformedCatalogPropertyIsNotEchoed(t *testing.T) {
	const secret = "S3cretValueZq81"
	check := func(how, out string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: accepted", how)
		}
		if strings.Contains(out+err.Error(), secret[:8]) || strings.Contains(out+err.Error(), secret[len(secret)-8:]) {
			t.Errorf("%s: a piece of the credential is printed: %v\n%s", how, err, out)
		}
	}
	out, errOut, err := runCLI(t, t.TempDir(), "--catalog-prop", "s3.secret-access-key "+secret, "gaps")
	check("a flag", out+errOut, err)
	t.Setenv("COVMIRROR_CATALOG_PROPS", "type=rest,credential=client:"+secret[:7]+","+secret[7:])
	out, errOut, err = runCLI(t, t.TempDir(), "gaps")
	check("the environment", out+errOut, err)
}
