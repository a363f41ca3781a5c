package benthos

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/internal/redact"
)

// slogHandler sends covmirror's log lines (the pod's) to Benthos' logger,
// so that they share the stream's level and format.
type slogHandler struct {
	l     *service.Logger
	attrs []slog.Attr
	group string
}

func newSlog(l *service.Logger) *slog.Logger { return slog.New(&slogHandler{l: l}) }

func (h *slogHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		if a.Equal(slog.Attr{}) {
			return true
		}
		fmt.Fprintf(&b, " %s%s=%v", h.group, a.Key, a.Value.Resolve())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	// Redacted as the commands' logger redacts: an attribute may be a
	// tier's error quoting a credential.
	switch msg := redact.Text(b.String(), false); {
	case r.Level >= slog.LevelError:
		h.l.Error(msg)
	case r.Level >= slog.LevelWarn:
		h.l.Warn(msg)
	case r.Level >= slog.LevelInfo:
		h.l.Info(msg)
	default:
		h.l.Debug(msg)
	}
	return nil
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &slogHandler{l: h.l, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...), group: h.group}
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	return &slogHandler{l: h.l, attrs: h.attrs, group: h.group + name + "."}
}

// logger is Benthos' logger for the plugins' own lines, each redacted as
// a whole: a line may quote a sink's error (a driver's DSN, a URL's
// token) or a tier's.
type logger struct{ l *service.Logger }

func (g logger) Errorf(format string, a ...any) {
	g.l.Error(redact.Text(fmt.Sprintf(format, a...), false))
}
func (g logger) Warnf(format string, a ...any) {
	g.l.Warn(redact.Text(fmt.Sprintf(format, a...), false))
}
func (g logger) Infof(format string, a ...any) {
	g.l.Info(redact.Text(fmt.Sprintf(format, a...), false))
}
func (g logger) Debugf(format string, a ...any) {
	g.l.Debug(redact.Text(fmt.Sprintf(format, a...), false))
}
