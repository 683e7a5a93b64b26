// Package httpapi is Shutter's HTTP interface: routes, the screenshot
// handler that composes the steps of a request, and the one table that maps
// error codes to statuses.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/cachefill"
	"github.com/shutterhq/shutter/internal/health"
	"github.com/shutterhq/shutter/internal/logging"
	"github.com/shutterhq/shutter/internal/metrics"
	"github.com/shutterhq/shutter/internal/queue"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/usage"
)

// Deps are the parts the server composes.
type Deps struct {
	Parser   *screenshot.Parser
	Keys     screenshot.KeyStore
	Guard    screenshot.Guard
	Queue    *queue.Queue
	Renderer screenshot.Renderer
	// Limiter and Quota enforce the plans; nil means no limit.
	Limiter    screenshot.Limiter
	Quota      screenshot.QuotaStore
	Plans      screenshot.Plans
	RateWindow time.Duration
	// HoldTTL is how long a quota reservation outlives a crashed process.
	HoldTTL time.Duration
	// Cache stores is_cached screenshots; nil renders every time.
	Cache screenshot.Cache
	// Lock, when set, lets one replica fill a cache entry while the others
	// wait for it.
	Lock screenshot.Locker
	// Ready reports whether the server can take screenshots; nil means yes.
	Ready func(ctx context.Context) error
	// Health runs the component checks of /health; nil serves 404.
	Health *health.Checker
	// HealthDetails shows the whole report and readiness error; without it
	// they are redacted (health.Report.Public).
	HealthDetails bool
	// Metrics counts requests; nil counts nothing.
	Metrics *metrics.Metrics
	// OpenAPI is the document served at /openapi.
	OpenAPI []byte
	// Accounts serves users, sessions, tokens and key management under
	// /v1, and opens signing secrets; nil serves none of it.
	Accounts *account.Service
	// History records each request of a key; nil records nothing.
	History *usage.Recorder
	// Identity is external sign-in; nil has none.
	Identity *account.Identity
	// PublicURL is the public address of the API (VITE_SERVER_URL); ""
	// uses the request's.
	PublicURL string
	// Dashboard, when set, adds the web console's routes (and / redirects
	// to it).
	Dashboard interface{ Routes(r *httprouter.Router) }
	// SecureCookies marks the session cookie Secure (with the __Host-
	// prefix): production, served over HTTPS.
	SecureCookies bool
}

// Server serves the HTTP API.
type Server struct {
	Deps
	log      *slog.Logger
	handler  http.Handler
	draining atomic.Bool
	filler   *cachefill.Filler // nil without a cache
	// hitPolicy re-checks the outbound policy for cache hits.
	hitPolicy policyMemo
	meter     *usage.Meter // the monthly quota around renders; nil without a quota store
}

// Drain makes readiness fail so that load balancers stop sending traffic,
// while requests are still served: the first step of a graceful shutdown.
func (s *Server) Drain() { s.draining.Store(true) }

// New returns the server with its routes.
func New(d Deps, log *slog.Logger) *Server {
	s := &Server{Deps: d, log: logging.New(log.Handler())}
	if d.Quota != nil {
		s.meter = &usage.Meter{Store: d.Quota, HoldTTL: d.HoldTTL, Log: s.log,
			OnExhausted: func() { s.count(func(m *metrics.Metrics) { m.Refusals.WithLabelValues("quota").Inc() }) }}
	}
	if d.Cache != nil {
		s.filler = &cachefill.Filler{Cache: d.Cache, Lock: d.Lock, LockTTL: d.HoldTTL, Log: s.log,
			OnRead: func(result string) {
				s.count(func(m *metrics.Metrics) { m.CacheRequests.WithLabelValues(result).Inc() })
			}}
	}
	r := httprouter.New()
	r.HandlerFunc(http.MethodGet, "/v1/screenshots/take", s.take)
	r.HandlerFunc(http.MethodGet, "/health/live", s.live)
	r.HandlerFunc(http.MethodGet, "/health/ready", s.ready)
	r.HandlerFunc(http.MethodGet, "/health", s.health)
	r.HandlerFunc(http.MethodGet, "/openapi", s.openapi)
	if d.Accounts != nil {
		s.routeAccounts(r)
		s.routeIdentity(r)
	}
	if d.Dashboard != nil {
		d.Dashboard.Routes(r)
	}
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.writeError(w, req, screenshot.Errorf(screenshot.ENOTFOUND, "no such endpoint: %s", req.URL.Path))
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// The router has set Allow to the methods the path has.
		writeJSON(w, http.StatusMethodNotAllowed, ErrorBody{Error: "method not allowed; use " + w.Header().Get("Allow"), RequestID: RequestID(req.Context())})
	})
	r.HandleOPTIONS = false
	s.handler = s.wrap(r)
	return s
}

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) take(w http.ResponseWriter, r *http.Request) {
	if err := s.serveTake(w, r); err != nil {
		s.writeError(w, r, err)
	}
}

// serveTake is the screenshot endpoint, step by step.
func (s *Server) serveTake(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	signed, signature, signedReq, err := account.SplitSignature(r.URL.RawQuery)
	if err != nil {
		return err
	}
	q, err := url.ParseQuery(signed)
	if err != nil {
		return screenshot.Errorf(screenshot.EINVALID, "the query string is not valid URL encoding")
	}
	o, secret, err := s.Parser.Parse(q)
	if err != nil {
		return err
	}
	key, err := s.authenticate(ctx, secret)
	if err != nil {
		return err
	}
	in := reqInfo(ctx)
	in.keyID, in.host, in.format = key.ID, o.Host(), string(o.Format)
	if err := s.checkSignature(ctx, key, signed, signature, signedReq); err != nil {
		return err
	}
	limits := s.Plans.For(key)
	if err := s.rateLimit(w, r, key, limits); err != nil {
		return err
	}
	target, _ := url.Parse(o.URL)
	if !screenshot.DomainAllowed(key.Domains, target.Hostname()) {
		return screenshot.Errorf(screenshot.EFORBIDDEN, "this API key may not capture %q; it is limited to %s",
			target.Hostname(), strings.Join(key.Domains, ", "))
	}
	o.AllowedDomains = key.Domains
	reqInfo(ctx).cache = "BYPASS"
	if o.Cached && s.Cache != nil {
		return s.serveCached(w, r, key, limits, o)
	}
	img, err := s.render(ctx, key, limits, o)
	if err != nil {
		return err
	}
	writeImage(w, img, time.Hour)
	return nil
}

// render checks the target, reserves quota, waits for a slot and renders.
// The quota unit is committed only when an image comes out.
func (s *Server) render(ctx context.Context, key *screenshot.Key, limits screenshot.PlanLimits, o *screenshot.Options) (img *screenshot.Image, err error) {
	if err := s.Guard.CheckURL(ctx, o.URL); err != nil {
		return nil, err
	}
	hold, err := s.meter.Reserve(ctx, key, limits)
	if err != nil {
		return nil, err
	}
	release, err := s.Queue.Acquire(ctx)
	if err != nil {
		s.meter.Settle(ctx, hold, false)
		if errors.Is(err, queue.ErrFull) || errors.Is(err, queue.ErrTimeout) {
			s.count(func(m *metrics.Metrics) { m.Refusals.WithLabelValues("queue_full").Inc() })
			return nil, &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "all render slots are busy; try again shortly",
				RetryAfter: s.Queue.RetryAfter(), Err: err}
		}
		return nil, &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the request was canceled while it waited", Err: err}
	}
	defer func() {
		release(img != nil) // also when the render panics
		s.meter.Settle(ctx, hold, img != nil)
	}()
	if o.BypassCSP {
		u, _ := url.Parse(o.URL)
		s.log.WarnContext(ctx, "bypass_csp used", "key_id", key.ID, "target_host", u.Hostname())
	}
	start := time.Now()
	img, err = s.Renderer.Render(ctx, o)
	if err != nil {
		return nil, err
	}
	s.count(func(m *metrics.Metrics) {
		m.RenderDuration.WithLabelValues(string(o.Format)).Observe(time.Since(start).Seconds())
	})
	return img, nil
}

// rateLimit counts the request in the key's window, sets the X-RateLimit-*
// headers and refuses a request over the limit.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, key *screenshot.Key, limits screenshot.PlanLimits) error {
	if s.Limiter == nil {
		return nil
	}
	st, err := s.Limiter.Allow(r.Context(), key.ID, limits.Rate, s.RateWindow)
	if err != nil {
		if screenshot.ErrorCode(err) != screenshot.EINTERNAL {
			return err
		}
		return &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the rate limiter is unavailable; try again shortly",
			RetryAfter: time.Second, Err: err}
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(st.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(st.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(st.Reset.Unix(), 10))
	if !st.Allowed {
		s.count(func(m *metrics.Metrics) { m.Refusals.WithLabelValues("rate_limit").Inc() })
		wait := max(time.Until(st.Reset), time.Second)
		return &screenshot.Error{Code: screenshot.ERATELIMIT, RetryAfter: wait,
			Message: fmt.Sprintf("rate limit of %d requests per %s exceeded; the window resets at %s",
				st.Limit, s.RateWindow, st.Reset.UTC().Format(time.RFC3339))}
	}
	return nil
}

// checkSignature verifies a request's signature when it has one, and
// refuses a key that requires one without it.
func (s *Server) checkSignature(ctx context.Context, key *screenshot.Key, signed, signature string, present bool) error {
	if !present && !key.RequireSignature {
		return nil
	}
	if !present {
		return screenshot.Errorf(screenshot.EFORBIDDEN, "this API key requires signed requests: end the query with &signature=<HMAC-SHA256 of the query, hex>")
	}
	if s.Accounts == nil {
		return screenshot.Errorf(screenshot.EFORBIDDEN, "request signatures are not available on this server")
	}
	secret, err := s.Accounts.SigningSecret(ctx, key)
	if err != nil {
		return &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the key's signing secret cannot be read; try again shortly",
			RetryAfter: 5 * time.Second, Err: err}
	}
	if !account.VerifySignature(secret, signed, signature) {
		return screenshot.Errorf(screenshot.EFORBIDDEN, "the signature does not match this request (it covers the query exactly as sent, before &signature=)")
	}
	return nil
}

// Wait waits for background quota commits, at most d.
func (s *Server) Wait(d time.Duration) { s.meter.Wait(d) }

// count updates metrics when there are any.
func (s *Server) count(f func(m *metrics.Metrics)) {
	if s.Metrics != nil {
		f(s.Metrics)
	}
}

func writeImage(w http.ResponseWriter, img *screenshot.Image, maxAge time.Duration) {
	h := w.Header()
	h.Set("Content-Type", img.Format.ContentType())
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(img.Data)))
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(maxAge/time.Second)))
	if img.Truncated {
		h.Set("X-Screenshot-Truncated", "true")
	}
	w.WriteHeader(http.StatusOK)
	w.Write(img.Data) //nolint:gosec // image bytes under an image or PDF content type, with nosniff
}

// authenticate finds the key of the secret. Every failure is the same 403 so
// that a caller learns nothing about which keys exist.
func (s *Server) authenticate(ctx context.Context, secret string) (*screenshot.Key, error) {
	k, err := s.Keys.KeyByHash(ctx, screenshot.HashSecret(secret))
	if err != nil {
		if screenshot.ErrorCode(err) == screenshot.ENOTFOUND {
			return nil, screenshot.Errorf(screenshot.EUNAUTHORIZED, "invalid API key")
		}
		return nil, &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the key store is unavailable; try again shortly",
			RetryAfter: 5 * time.Second, Err: err}
	}
	if k.Revoked() {
		return nil, screenshot.Errorf(screenshot.EUNAUTHORIZED, "invalid API key")
	}
	return k, nil
}

func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "alive", "timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "timestamp": now, "error": "shutting down"})
		return
	}
	if s.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.Ready(ctx); err != nil {
			msg := err.Error()
			if !s.HealthDetails {
				msg = screenshot.ErrorMessage(err)
				s.log.WarnContext(r.Context(), "not ready", "err", err)
			}
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "timestamp": now, "error": msg})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "timestamp": now})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.Health == nil {
		s.writeError(w, r, screenshot.Errorf(screenshot.ENOTFOUND, "no such endpoint: %s", r.URL.Path))
		return
	}
	rep := s.Health.Run(r.Context())
	status := http.StatusOK
	if rep.Status == health.Unhealthy {
		status = http.StatusServiceUnavailable
	}
	if !s.HealthDetails {
		rep = rep.Public()
	}
	writeJSON(w, status, rep)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(s.OpenAPI)))
	w.Write(s.OpenAPI)
}
