package reconcile

import (
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/logtest"
)

// TestMetricsServerLogsAPanicRedacted: a handler's panic, which net/http
// logs with its value and the stack, goes to the job's logger redacted,
// never to the default log as it is (it may quote a DSN with its
// password).
func TestMetricsServerLogsAPanicRedacted(t *testing.T) {
	const secret = "PanicPw9secret"
	var logs, std logtest.Buffer
	was := log.Writer()
	log.SetOutput(&std)
	defer log.SetOutput(was)
	srv := MetricsServer(NewMetrics(0, []string{"lake"}), "", slog.New(slog.NewTextHandler(&logs, nil)))
	srv.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("querying postgres://reconcile:" + secret + "@db/lake failed")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if resp, err := http.Get("http://" + ln.Addr().String() + "/metrics"); err == nil {
		resp.Body.Close()
	}
	srv.Close()
	if !strings.Contains(logs.String(), "panic") {
		t.Errorf("the panic is not in the job's log:\n%s\nthe default log:\n%s", logs.String(), std.String())
	}
	if strings.Contains(logs.String()+std.String(), secret[:8]) {
		t.Errorf("the panic's password is logged:\n%s\n%s", logs.String(), std.String())
	}
}
