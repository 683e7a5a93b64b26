package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/blocking"
	"github.com/shutterhq/shutter/internal/browserpath"
	"github.com/shutterhq/shutter/internal/chromium"
	"github.com/shutterhq/shutter/internal/config"
	"github.com/shutterhq/shutter/internal/dashboard"
	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/health"
	"github.com/shutterhq/shutter/internal/httpapi"
	"github.com/shutterhq/shutter/internal/metrics"
	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/openapi"
	"github.com/shutterhq/shutter/internal/postgres"
	"github.com/shutterhq/shutter/internal/queue"
	"github.com/shutterhq/shutter/internal/redisstore"
	"github.com/shutterhq/shutter/internal/s3store"
	"github.com/shutterhq/shutter/internal/screenshot"
	usagehistory "github.com/shutterhq/shutter/internal/usage"
	"github.com/shutterhq/shutter/internal/version"
)

// store is what the server needs of a key and usage store backend.
type store interface {
	screenshot.KeyStore
	screenshot.QuotaStore
	account.Store
	Ping(ctx context.Context) error
	Close() error
}

// openStore opens PostgreSQL when a database is configured, else the
// embedded SQLite file in DATA_DIR. This is the only place that chooses.
func openStore(ctx context.Context, cfg *config.Config) (store, string, error) {
	if cfg.UsesDatabase() {
		s, err := postgres.Open(ctx, postgres.Config{DSN: cfg.DatabaseDSN(), MaxConns: int32(cfg.DatabaseMaxConns)}) //nolint:gosec // config bounds it to 1…1000
		return s, "postgres", err
	}
	s, err := embedded.Open(cfg.DataDir)
	return s, "sqlite", err
}

func plans(c config.Plans) screenshot.Plans {
	return screenshot.Plans{
		Free:       screenshot.PlanLimits{Rate: c.FreeRate, Quota: c.FreeQuota},
		Pro:        screenshot.PlanLimits{Rate: c.ProRate, Quota: c.ProQuota},
		Enterprise: screenshot.PlanLimits{Rate: c.EnterpriseRate, Quota: c.EnterpriseQuota},
	}
}

// Main is the running server: wiring only, so that tests can start the whole
// program on port 0 and drive it for real.
type Main struct {
	Config *config.Config
	Log    *slog.Logger
	Stderr io.Writer

	// Addr and MetricsAddr are the listening addresses once Run has returned.
	Addr, MetricsAddr string

	store    store
	backend  string
	accounts *account.Service
	history  *usagehistory.Recorder
	redis    *redisstore.Limiter
	cache    screenshot.Cache
	s3       *s3store.Store
	stopBg   context.CancelFunc
	pool     *chromium.Pool
	consent  *chromium.ConsentEngine // nil: consent dialogs are only hidden
	queue    *queue.Queue
	limiter  screenshot.Limiter
	guard    *netguard.Guard
	checker  *health.Checker
	api      *httpapi.Server
	http     *http.Server
	metrics  *http.Server
}

// Run opens the stores, starts the browsers and starts serving. It returns
// once the server listens.
func (m *Main) Run(ctx context.Context) (err error) {
	started := time.Now()
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	bg, stopBg := context.WithCancel(context.Background())
	m.stopBg = stopBg
	mx := metrics.New()
	for _, step := range []func() error{
		func() error { return m.openStores(ctx) },
		func() error { return m.openAccounts() },
		func() error { return m.ensureDevKey(ctx) },
		func() error { return m.openCache(ctx, bg) },
		func() error { return m.openGuard() },
		func() error { return m.startBrowsers(ctx, bg, mx) },
		func() error { return m.buildAPI(started, mx) },
		func() error { return m.listen(mx) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	m.Log.InfoContext(ctx, "listening", "addr", m.Addr, "metrics_addr", m.MetricsAddr, "env", m.Config.NodeEnv,
		"version", version.String(), "browsers", len(m.pool.Stats()), "max_concurrent", m.Config.MaxConcurrent)
	return nil
}

// openStores opens the key and usage store, and the rate limiter: Redis
// when configured, with the in-process limiter standing in while it is
// down.
func (m *Main) openStores(ctx context.Context) (err error) {
	cfg := m.Config
	if m.store, m.backend, err = openStore(ctx, cfg); err != nil {
		return err
	}
	m.limiter = embedded.NewLimiter()
	if cfg.UsesRedis() {
		if m.redis, err = redisstore.New(redisstore.Config{URL: cfg.RedisURL, Addr: cfg.RedisAddr(), Password: cfg.RedisPassword}, m.limiter, m.Log); err != nil {
			return err
		}
		m.limiter = m.redis
	}
	return nil
}

// openAccounts builds the account service and starts the usage history.
func (m *Main) openAccounts() (err error) {
	cfg := m.Config
	if m.accounts, err = newAccounts(cfg, m.store, m.limiter); err != nil {
		return err
	}
	if cfg.UsageHistory {
		m.history = &usagehistory.Recorder{Store: m.store, PerKey: cfg.RequestLogPerKey, Retention: cfg.RequestLogRetention, Log: m.Log}
		go m.history.Run()
	}
	return nil
}

// openCache opens the screenshot cache: S3 when configured, else a
// directory, each with its sweeper.
func (m *Main) openCache(ctx, bg context.Context) (err error) {
	cfg := m.Config
	if !cfg.Storage.Configured() {
		dc, err := embedded.OpenCache(filepath.Join(cfg.DataDir, "cache"), m.Log)
		if err != nil {
			return err
		}
		m.cache = dc
		go dc.RunSweeper(bg, 10*time.Minute)
		return nil
	}
	st := cfg.Storage
	endpoint := st.URL
	if st.Endpoint != "" {
		endpoint = st.Endpoint
	}
	m.s3, err = s3store.Open(ctx, s3store.Config{Endpoint: endpoint, Region: st.Region, Bucket: st.Bucket,
		AccessKeyID: st.AccessKeyID, SecretAccessKey: st.SecretAccessKey, PathStyle: st.UsePathStyle}, m.Log)
	if err != nil {
		return err
	}
	m.cache = m.s3
	go m.s3.RunSweeper(bg, time.Hour)
	return nil
}

// openGuard builds the outbound policy from the settings.
func (m *Main) openGuard() (err error) {
	cfg := m.Config
	m.guard = &netguard.Guard{AllowPrivate: cfg.AllowPrivateTargets, OnlyAllowed: cfg.AllowedTargetsOnly}
	if m.guard.AllowNets, m.guard.AllowHosts, err = netguard.ParseAllowList(cfg.AllowedPrivate); err != nil {
		return fmt.Errorf("ALLOWED_PRIVATE_TARGETS: %w", err)
	}
	return nil
}

// contentFilter loads the filter lists: the maintained ones when installed
// first, the settings' lists after them; the built-in lists are always
// there.
func (m *Main) contentFilter(ctx, bg context.Context) (*blocking.Filter, error) {
	cfg := m.Config
	lists := map[blocking.Category][]string{}
	for c, srcs := range cfg.FilterLists {
		lists[blocking.Category(c)] = srcs
	}
	for c, file := range map[blocking.Category]string{blocking.Ads: "easylist.txt", blocking.Trackers: "easyprivacy.txt"} {
		if p := filepath.Join(cfg.EasyListDir, file); cfg.EasyListDir != "" && fileExists(p) {
			lists[c] = append([]string{p}, lists[c]...)
		}
	}
	content, err := blocking.New(ctx, blocking.Config{Lists: lists, Refresh: cfg.FilterRefresh}, m.Log)
	if err != nil {
		return nil, err
	}
	go content.Run(bg)
	return content, nil
}

// startBrowsers loads the content filter and the consent engine, and
// starts the browser pool and the render queue.
func (m *Main) startBrowsers(ctx, bg context.Context, mx *metrics.Metrics) (err error) {
	cfg := m.Config
	content, err := m.contentFilter(ctx, bg)
	if err != nil {
		return err
	}
	if cfg.AutoconsentDir != "" {
		if m.consent, err = chromium.LoadConsentEngine(cfg.AutoconsentDir); err != nil {
			m.Log.WarnContext(ctx, "consent engine not loaded; consent dialogs are only hidden", "err", err)
		}
	}
	pcfg := chromium.Config{
		Local: cfg.LocalBrowsers, URLs: cfg.BrowserURLs, BrowserTokens: browserTokens(cfg),
		Timeout: cfg.ScreenshotTimeout, LoadTimeout: cfg.PageLoadTimeout, IdleTime: cfg.NetworkIdle,
		OnBlocked: func(category string) { mx.Blocked.WithLabelValues(category).Inc() },
		OnPhase:   func(phase string, d time.Duration) { mx.RenderPhase.WithLabelValues(phase).Observe(d.Seconds()) },
		Content:   content,
		Consent:   m.consent,
	}
	if !cfg.AllowPrivateTargets || cfg.AllowedTargetsOnly {
		// Every request of the page passes the same policy as its URL, at
		// the browser (interception) and at the connection (a per-render
		// proxy that dials only what it checked).
		guard := m.guard
		pcfg.Check = func(u string) error { return guard.CheckRequest(context.Background(), u) }
		pcfg.Outbound = &netguard.Proxy{Guard: guard, Host: cfg.ProxyHost, Log: m.Log}
	}
	if len(cfg.BrowserURLs) == 0 {
		if pcfg.ExecPath, err = browserpath.Find(cfg.ChromePath); err != nil {
			return err
		}
	}
	if m.pool, err = chromium.New(pcfg, m.Log); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := m.pool.Start(sctx); err != nil {
		return err
	}
	m.queue = queue.New(cfg.MaxConcurrent, cfg.MaxQueued, cfg.QueueTimeout)
	m.registerGauges(mx)
	return nil
}

// buildAPI composes the HTTP API from the parts.
func (m *Main) buildAPI(started time.Time, mx *metrics.Metrics) error {
	cfg := m.Config
	m.checker = &health.Checker{Checks: m.checks(), Version: version.String(), Started: started}
	parser := screenshot.NewParser(screenshot.Limits{DefaultWidth: cfg.DefaultWidth, DefaultHeight: cfg.DefaultHeight, MaxWidth: cfg.MaxWidth, MaxHeight: cfg.MaxHeight})
	dash := &dashboard.Dashboard{Accounts: m.accounts, Quota: m.store, Plans: plans(cfg.Plans), Params: parser.Params(),
		Health: m.checker, PublicURL: cfg.PublicURL, SecureCookies: cfg.NodeEnv == "production", External: externalName(cfg), Log: m.Log}
	if err := dash.Init(); err != nil {
		return err
	}
	m.api = httpapi.New(httpapi.Deps{
		Parser:        parser,
		Keys:          &screenshot.KeyCache{KeyStore: m.store, TTL: cfg.KeyCacheTTL},
		Guard:         m.guard,
		Queue:         m.queue,
		Renderer:      m.pool,
		Limiter:       m.limiter,
		Quota:         m.store,
		Plans:         plans(cfg.Plans),
		RateWindow:    cfg.RateLimitWindow,
		HoldTTL:       cfg.QueueTimeout + cfg.ScreenshotTimeout + 30*time.Second,
		Cache:         m.cache,
		Lock:          m.locker(),
		Ready:         m.ready,
		Health:        m.checker,
		HealthDetails: cfg.HealthDetails,
		Metrics:       mx,
		OpenAPI:       openapi.Document(parser.Params()),
		Accounts:      m.accounts,
		Identity:      identity(cfg),
		PublicURL:     cfg.PublicURL,
		History:       m.history,
		SecureCookies: cfg.NodeEnv == "production",
		Dashboard:     dash,
	}, m.Log)
	dash.API = m.api
	if h := m.history; h != nil {
		mx.Counter("shutter_usage_history_dropped_total", "Usage-history events dropped because the buffer was full.",
			func() float64 { return float64(h.Dropped()) })
	}
	return nil
}

// externalName names the identity provider on the sign-in button: its
// issuer's host.
func externalName(cfg *config.Config) string {
	if cfg.IdentityClientID == "" {
		return ""
	}
	if u, err := url.Parse(cfg.IdentityIssuerURL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return "your identity provider"
}

// identity is external sign-in when IDENTITY_CLIENT_ID is set.
func identity(cfg *config.Config) *account.Identity {
	if cfg.IdentityClientID == "" {
		return nil
	}
	return &account.Identity{Issuer: cfg.IdentityIssuerURL, ClientID: cfg.IdentityClientID, ClientSecret: cfg.IdentityClientSecret}
}

// ready is readiness: the database answers and a browser is ready.
func (m *Main) ready(ctx context.Context) error {
	if err := m.store.Ping(ctx); err != nil {
		return &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "database: unreachable", Err: fmt.Errorf("database: %w", err)}
	}
	if !m.pool.Ready() {
		return screenshot.Errorf(screenshot.EUNAVAILABLE, "browser: no browser is ready")
	}
	return nil
}

// listen serves the API, and the metrics (with the whole health report) on
// their own port, which no Service publishes.
func (m *Main) listen(mx *metrics.Metrics) (err error) {
	cfg := m.Config
	m.http = &http.Server{
		Handler:           m.api,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
	}
	if m.Addr, err = serve(m.http, cfg.Port); err != nil {
		return err
	}
	if cfg.MetricsPort < 0 {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/", mx.Handler())
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(m.checker.Run(r.Context()))
	})
	m.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if m.MetricsAddr, err = serve(m.metrics, cfg.MetricsPort); err != nil {
		return fmt.Errorf("METRICS_PORT: %w", err)
	}
	return nil
}

// locker is Redis when it is configured: replicas then fill a cold cache
// entry once between them.
func (m *Main) locker() screenshot.Locker {
	if m.redis == nil {
		return nil
	}
	return m.redis
}

func serve(s *http.Server, port int) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	go s.Serve(ln)
	return ln.Addr().String(), nil
}

// Shutdown is the graceful stop of SIGTERM: readiness fails first, then after
// SHUTDOWN_DELAY_MS (time for load balancers to notice) the listener closes
// and requests in flight get SHUTDOWN_GRACE_MS to finish; then everything is
// closed.
func (m *Main) Shutdown() error {
	if m.api != nil {
		m.api.Drain()
		time.Sleep(m.Config.ShutdownDelay)
	}
	return m.Close()
}

// Close stops accepting requests, lets those in flight finish within the
// grace period, then closes the browsers and the stores.
func (m *Main) Close() error {
	var errs []error
	if m.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownGrace)
		if err := m.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("requests still running after SHUTDOWN_GRACE_MS: %w", err))
			m.http.Close()
		}
		cancel()
	}
	if m.api != nil {
		m.api.Wait(10 * time.Second) // quota commits retrying through an outage
	}
	if m.history != nil {
		m.history.Close(10 * time.Second) // what is buffered is written
	}
	if m.metrics != nil {
		m.metrics.Close()
	}
	if m.stopBg != nil {
		m.stopBg()
	}
	if m.pool != nil {
		errs = append(errs, m.pool.Close())
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
	}
	if m.redis != nil {
		errs = append(errs, m.redis.Close())
	}
	return errors.Join(errs...)
}

func (m *Main) registerGauges(mx *metrics.Metrics) {
	q := m.queue
	mx.Gauge("shutter_queue_waiting", "Requests waiting for a render slot.", func() float64 { return float64(q.Stats().Waiting) })
	mx.Gauge("shutter_queue_active", "Renders in progress.", func() float64 { return float64(q.Stats().Active) })
	mx.Gauge("shutter_queue_slots", "Render slots (MAX_CONCURRENT_SCREENSHOTS).", func() float64 { return float64(q.Stats().Slots) })
	mx.Counter("shutter_renders_completed_total", "Renders that produced an image.", func() float64 { return float64(q.Stats().Completed) })
	mx.Counter("shutter_renders_failed_total", "Renders that failed.", func() float64 { return float64(q.Stats().Failed) })
	mx.Gauge("shutter_browsers", "Browsers in the pool.", func() float64 { return float64(len(m.pool.Stats())) })
	mx.Gauge("shutter_browsers_ready", "Browsers ready to render.", func() float64 {
		n := 0
		for _, b := range m.pool.Stats() {
			if b.Ready {
				n++
			}
		}
		return float64(n)
	})
	mx.Counter("shutter_browser_restarts_total", "Browser relaunches and reconnections.", func() float64 {
		var n int64
		for _, b := range m.pool.Stats() {
			n += b.Restarts
		}
		return float64(n)
	})
}

// checks are the components of /health.
func (m *Main) checks() []health.Check {
	storage, s3 := health.DataDir(m.Config.DataDir), health.NoObjectStorage()
	if m.s3 != nil {
		bucket := m.Config.Storage.Bucket
		storage, s3 = health.ObjectStorage("storage", bucket, m.s3.Ping), health.ObjectStorage("s3", bucket, m.s3.Ping)
	}
	queue := health.Queue(func() health.QueueState {
		st := m.queue.Stats()
		return health.QueueState{Waiting: st.Waiting, Active: st.Active, Slots: st.Slots, Completed: st.Completed,
			Failed: st.Failed, Running: m.pool.Ready()}
	})
	browsers := health.Browsers(func() (int, int, any) {
		stats := m.pool.Stats()
		ready := 0
		for _, b := range stats {
			if b.Ready {
				ready++
			}
		}
		return ready, len(stats), stats
	})
	consent := health.Consent(false, "", 0)
	if m.consent != nil {
		consent = health.Consent(true, m.consent.Version, m.consent.Rules)
	}
	checks := []health.Check{health.Database(m.backend, m.store.Ping), storage, queue, s3, browsers, consent}
	if m.redis != nil {
		checks = append(checks, health.Redis(m.redis.Ping))
	}
	return checks
}

// ensureDevKey creates a first key in development when there is none, so that
// `make run` can be tried at once. It is printed once and only its hash kept.
func (m *Main) ensureDevKey(ctx context.Context) error {
	if m.Config.NodeEnv != "development" {
		return nil
	}
	keys, err := m.store.ListKeys(ctx)
	if err != nil || len(keys) > 0 {
		return err
	}
	c, err := m.accounts.CreateKey(ctx, account.NewKey{Name: "development", Plan: screenshot.PlanPro})
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stderr, "\nCreated a development API key (%s); it is shown only this once:\n\n    %s\n\n", c.Key.ID, c.Secret)
	if n, err := m.store.CountUsers(ctx); err == nil && n == 0 {
		fmt.Fprintf(m.Stderr, "The dashboard is at http://localhost:%d/ — the first user to sign up there is the admin.\n\n", m.Config.Port)
	}
	return nil
}

// browserTokens are the tokens the pool presents to browser supervisors;
// none means plain DevTools endpoints.
func browserTokens(cfg *config.Config) []string {
	var out []string
	for _, t := range []string{cfg.BrowserToken, cfg.BrowserTokenPrevious} {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
