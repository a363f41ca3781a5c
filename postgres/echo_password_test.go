package postgres

import (
	"net"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

// TestOpenNeverPrintsAnEchoedPassword: a server that quotes the password
// it was sent in its error: Open's error, as every output prints it, holds
// no piece of it, whichever way the connection string gives it.
func TestOpenNeverPrintsAnEchoedPassword(t *testing.T) {
	const secret = "Xe5sEchoedPassword"
	addr := catalogtest.EchoPasswordServer(t)
	host, port, _ := net.SplitHostPort(addr)
	for _, url := range []string{
		"postgres://u:" + secret + "@" + addr + "/db?sslmode=disable",
		"postgres://u@" + addr + "/db?sslmode=disable&password=" + secret,
		"host=" + host + " port=" + port + " user=u password='a b" + secret + "' sslmode=disable",
	} {
		_, err := Open(ctx, Options{URL: url, Schema: "covmirror", MaxAttempts: 1})
		if err == nil {
			t.Fatal("Open succeeded against a server that refuses every password")
		}
		if !strings.Contains(err.Error(), "password authentication failed") {
			t.Fatalf("the server's message is not in the error, so the test shows nothing: %v", err)
		}
		if strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("the password is in the error: %v", err)
		}
	}
}
