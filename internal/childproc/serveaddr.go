package childproc

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// ServeAddr reads the first line `covmirror serve` prints on stdout
// ("serving http://HOST:PORT/metrics ..."), discards the rest in the
// background, and returns HOST:PORT. It fails when the line is not that, or
// when none comes within timeout (the caller kills the process and shows
// its stderr).
func ServeAddr(stdout io.Reader, timeout time.Duration) (string, error) {
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasPrefix(f[1], "http://") {
			return "", fmt.Errorf("serve printed %q", l)
		}
		return strings.TrimSuffix(strings.TrimPrefix(f[1], "http://"), "/metrics"), nil
	case <-time.After(timeout):
		return "", fmt.Errorf("serve printed nothing within %v", timeout)
	}
}
