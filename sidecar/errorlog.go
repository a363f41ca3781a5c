package sidecar

import (
	"log"
	"log/slog"

	"github.com/covmirror/covmirror/internal/redact"
)

// errorLog is an http.Server's ErrorLog into logger, each line redacted
// (redact.ErrorLog).
func errorLog(logger *slog.Logger) *log.Logger {
	return redact.ErrorLog(logger, "sidecar: serving HTTP")
}
