package redact

import (
	"log"
	"log/slog"
	"strings"
)

// ErrorLog is an http.Server's ErrorLog into logger, each line redacted
// (Text) and logged at Error as msg's "err": net/http logs a handler's
// panic there (its value, which may quote a tier's error, and the stack)
// and a connection's failures, by default on stderr as they are. A nil
// logger is slog.Default's.
func ErrorLog(logger *slog.Logger, msg string) *log.Logger {
	if logger == nil {
		logger = slog.Default()
	}
	return log.New(errorWriter{logger, msg}, "", 0)
}

type errorWriter struct {
	logger *slog.Logger
	msg    string
}

func (w errorWriter) Write(p []byte) (int, error) {
	w.logger.Error(w.msg, "err", Text(strings.TrimSpace(string(p)), false))
	return len(p), nil
}
