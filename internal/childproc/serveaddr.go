package childproc

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// ServeAddr reads the first line `covmirror serve` prints on stdout
// ("serving http://HOST:PORT/v1/ (the record API) ..."), discards the rest
// in the background, and returns HOST:PORT. It fails when the line is not
// that, or when none comes within timeout (the caller kills the process
// and shows its stderr).
func ServeAddr(stdout io.Reader, timeout time.Duration) (string, error) {
	api, _, err := ServeAddrs(stdout, timeout)
	return api, err
}

// metricsListener is the metrics listener's part of serve's first line.
var metricsListener = regexp.MustCompile(`read-only: http://(\S+)/healthz`)

// ServeAddrs is ServeAddr, also returning the metrics listener's HOST:PORT
// ("" when serve runs none).
func ServeAddrs(stdout io.Reader, timeout time.Duration) (api, metrics string, err error) {
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		return ParseServeLine(l)
	case <-time.After(timeout):
		return "", "", fmt.Errorf("serve printed nothing within %v", timeout)
	}
}

// ParseServeLine reads serve's first line: the record API's HOST:PORT and
// the metrics listener's ("" when serve runs none).
func ParseServeLine(l string) (api, metrics string, err error) {
	f := strings.Fields(l)
	if len(f) < 2 || f[0] != "serving" || !strings.HasPrefix(f[1], "http://") || !strings.HasSuffix(f[1], "/v1/") {
		return "", "", fmt.Errorf("serve printed %q", l)
	}
	if m := metricsListener.FindStringSubmatch(l); m != nil {
		metrics = m[1]
	}
	return strings.TrimSuffix(strings.TrimPrefix(f[1], "http://"), "/v1/"), metrics, nil
}
