package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/metrics"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/usage"
)

// info is what one request's steps tell the access log.
type info struct {
	keyID   string
	cache   string
	status  int
	bytes   int64
	host    string // the target's host, once parsed
	format  string
	refused bool // for the key's quota
}

type infoKey struct{}

func reqInfo(ctx context.Context) *info {
	if i, ok := ctx.Value(infoKey{}).(*info); ok {
		return i
	}
	return &info{}
}

// RequestID returns the id of the request of ctx.
func RequestID(ctx context.Context) string { return screenshot.RequestIDFrom(ctx) }

func newRequestID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// recorder remembers the status and size of a response.
type recorder struct {
	http.ResponseWriter
	in *info
}

func (r *recorder) WriteHeader(code int) {
	if r.in.status == 0 {
		r.in.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.in.status == 0 {
		r.in.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.in.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// wrap adds the request id, the panic guard and the access log. The access
// log never contains the query: it carries the API key.
func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		in := &info{}
		ctx := screenshot.WithRequestID(context.WithValue(r.Context(), infoKey{}, in), id)
		r = r.WithContext(ctx)
		w.Header().Set("X-Request-Id", id)
		rec := &recorder{ResponseWriter: w, in: in}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(ctx, "panic", "panic", fmt.Sprint(v))
				if in.status == 0 {
					s.writeError(rec, r, errors.New("panic"))
				}
			}
			s.count(func(m *metrics.Metrics) {
				route := routeOf(r.URL.Path)
				m.Requests.WithLabelValues(route, strconv.Itoa(in.status)).Inc()
				m.RequestDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
			})
			s.record(ctx, in, start)
			s.log.InfoContext(ctx, "request", "method", r.Method, "path", r.URL.Path,
				"status", in.status, "duration_ms", time.Since(start).Milliseconds(),
				"bytes", in.bytes, "key_id", in.keyID, "cache", in.cache)
		}()
		next.ServeHTTP(rec, r)
	})
}

// routeOf is the metrics label of a path: the route, never the raw path,
// so that scanners cannot blow up the label set.
func routeOf(path string) string {
	switch path {
	case "/v1/screenshots/take", "/health", "/health/ready", "/health/live", "/openapi":
		return path
	}
	if strings.HasPrefix(path, "/v1/") {
		return "/v1/manage"
	}
	if path == "/" || strings.HasPrefix(path, "/dashboard") {
		return "/dashboard"
	}
	return "other"
}

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[screenshot.Code]int{
	screenshot.EINVALID:       http.StatusBadRequest,
	screenshot.EUNAUTHORIZED:  http.StatusForbidden,
	screenshot.EFORBIDDEN:     http.StatusForbidden,
	screenshot.ENOTFOUND:      http.StatusNotFound,
	screenshot.EUNPROCESSABLE: http.StatusUnprocessableEntity,
	screenshot.ERATELIMIT:     http.StatusTooManyRequests,
	screenshot.EUPSTREAM:      http.StatusBadGateway,
	screenshot.EUNAVAILABLE:   http.StatusServiceUnavailable,
	screenshot.ETIMEOUT:       http.StatusGatewayTimeout,
	screenshot.EINTERNAL:      http.StatusInternalServerError,

	screenshot.EUNAUTHENTICATED: http.StatusUnauthorized,
	screenshot.ECONFLICT:        http.StatusConflict,
	screenshot.ETOOLARGE:        http.StatusRequestEntityTooLarge,
}

// Status is the HTTP status of an error: the one table's, and 500 for a
// code without a status (our bug) or an error without a code.
func Status(err error) int {
	if status, ok := statusOf[screenshot.ErrorCode(err)]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// ErrorBody is the JSON body of every failed request.
type ErrorBody struct {
	Error     string `json:"error"`
	RequestID string `json:"requestId"`
}

// writeError answers with the error object. The client gets the safe
// message; the log gets the whole chain.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, screenshot.ErrQuotaExhausted) {
		reqInfo(r.Context()).refused = true
	}
	status := Status(err)
	id := RequestID(r.Context())
	var se *screenshot.Error
	coded := errors.As(err, &se)
	switch {
	case status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		// The target's fault, not ours.
		s.log.WarnContext(r.Context(), "target failed", "status", status, "err", err)
	case status >= 500:
		s.log.ErrorContext(r.Context(), "request failed", "status", status, "err", err)
	case coded && se.Err != nil:
		// The client's message leaves detail out (what a refused name
		// resolved to, say); the log keeps it.
		s.log.InfoContext(r.Context(), "request refused", "status", status, "err", err)
	default:
		s.log.DebugContext(r.Context(), "request refused", "status", status, "err", err)
	}
	if coded && se.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((se.RetryAfter+time.Second-1)/time.Second)))
	}
	writeJSON(w, status, ErrorBody{Error: screenshot.ErrorMessage(err), RequestID: id})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	buf, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)+1))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(buf, '\n'))
}

// record hands a key's request to the usage history.
func (s *Server) record(ctx context.Context, in *info, start time.Time) {
	if s.History == nil || in.keyID == "" {
		return
	}
	e := usage.Event{Request: account.Request{KeyID: in.keyID, At: start.UTC(), Status: in.status,
		DurationMS: time.Since(start).Milliseconds(), Host: in.host, Format: in.format, Cached: in.cache == "HIT",
		RequestID: RequestID(ctx)}}
	switch {
	case in.status == http.StatusOK && in.cache == "HIT":
		e.Outcome, e.Bytes = usage.CacheHit, in.bytes
	case in.status == http.StatusOK:
		e.Outcome, e.Bytes = usage.Succeeded, in.bytes
	case in.status == http.StatusTooManyRequests || in.refused:
		e.Outcome = usage.Refused
	case in.status >= 500 || in.status == http.StatusUnprocessableEntity:
		e.Outcome = usage.Failed
	}
	s.History.Record(e)
}
