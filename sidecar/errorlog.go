package sidecar

import (
	"log"
	"log/slog"
	"strings"

	"github.com/covmirror/covmirror/internal/redact"
)

// errorLog is an http.Server's ErrorLog into logger, each line redacted:
// net/http logs a handler's panic (its value, which may quote a tier's
// error, and the stack) and a connection's failures there, by default on
// stderr as they are.
func errorLog(logger *slog.Logger) *log.Logger {
	return log.New(errorWriter{logger}, "", 0)
}

type errorWriter struct{ logger *slog.Logger }

func (w errorWriter) Write(p []byte) (int, error) {
	w.logger.Error("sidecar: serving HTTP", "err", redact.Text(strings.TrimSpace(string(p)), false))
	return len(p), nil
}
