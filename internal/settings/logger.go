package settings

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/covmirror/covmirror/internal/redact"
)

// NewLogger is slog to w at the named level, in the named format.
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lvl = slog.LevelDebug
	case "info":
		lvl = slog.LevelInfo
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(redacting{slog.NewTextHandler(w, opts)}), nil
	case "json":
		return slog.New(redacting{slog.NewJSONHandler(w, opts)}), nil
	}
	return nil, fmt.Errorf("log format %q: use text or json", format)
}

// redacting is a handler that logs every attribute's text as redact.Text
// gives it: an error logged is often a catalog's, a store's or a driver's
// text, which may echo a credential the process was given.
type redacting struct{ slog.Handler }

func (h redacting) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, redact.Text(r.Message, false), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h redacting) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a)
	}
	return redacting{h.Handler.WithAttrs(red)}
}

func (h redacting) WithGroup(name string) slog.Handler { return redacting{h.Handler.WithGroup(name)} }

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact.Text(v.String(), false))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = redactAttr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, redact.Error(x).Error())
		case fmt.Stringer:
			return slog.String(a.Key, redact.Text(x.String(), false))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
