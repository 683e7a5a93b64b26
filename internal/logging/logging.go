// Package logging holds the slog handler that every Shutter logger goes
// through: it adds the request id of the context to each line, so that no
// call site has to pass it.
package logging

import (
	"context"
	"log/slog"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// ContextHandler adds request_id, from the context of a log call, to every
// record made with one.
type ContextHandler struct{ slog.Handler }

// Handle adds the request id and passes the record on.
func (h ContextHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := screenshot.RequestIDFrom(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the wrapper around the derived handler.
func (h ContextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return ContextHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the wrapper around the derived handler.
func (h ContextHandler) WithGroup(name string) slog.Handler {
	return ContextHandler{h.Handler.WithGroup(name)}
}

// New returns a logger over h that adds the request id of the context.
func New(h slog.Handler) *slog.Logger {
	if _, ok := h.(ContextHandler); ok {
		return slog.New(h)
	}
	return slog.New(ContextHandler{h})
}
