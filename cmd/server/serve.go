package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/shutterhq/shutter/internal/browserpath"
	"github.com/shutterhq/shutter/internal/chromium"
	"github.com/shutterhq/shutter/internal/config"
	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/httpapi"
	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/queue"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// store is what the server needs of a key store backend.
type store interface {
	screenshot.KeyStore
	Ping(ctx context.Context) error
	Close() error
}

func openStore(cfg *config.Config) (store, error) {
	if cfg.UsesDatabase() {
		return nil, errors.New("DATABASE_URL: the PostgreSQL backend is not available in this build; unset DATABASE_* to use the embedded store")
	}
	return embedded.Open(cfg.DataDir)
}

// Main is the running server: wiring only, so that tests can start the whole
// program on port 0 and drive it for real.
type Main struct {
	Config *config.Config
	Log    *slog.Logger
	Stderr io.Writer

	// Addr is the listening address once Run has returned.
	Addr string

	store  store
	pool   *chromium.Pool
	http   *http.Server
	served chan error
}

// Run opens the stores, starts the browsers and starts serving. It returns
// once the server listens.
func (m *Main) Run(ctx context.Context) (err error) {
	cfg := m.Config
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if m.store, err = openStore(cfg); err != nil {
		return err
	}
	if err := m.ensureDevKey(ctx); err != nil {
		return err
	}

	guard := &netguard.Guard{AllowPrivate: cfg.AllowPrivateTargets}
	pcfg := chromium.Config{
		Local: cfg.LocalBrowsers, URLs: cfg.BrowserURLs,
		Timeout: cfg.ScreenshotTimeout, LoadTimeout: cfg.PageLoadTimeout, IdleTime: cfg.NetworkIdle,
	}
	if !cfg.AllowPrivateTargets {
		// Every request of the page passes the same policy as its URL.
		pcfg.Check = func(u string) error { return guard.CheckRequest(context.Background(), u) }
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

	srv := httpapi.New(httpapi.Deps{
		Parser:   screenshot.NewParser(screenshot.Limits{DefaultWidth: cfg.DefaultWidth, DefaultHeight: cfg.DefaultHeight, MaxWidth: cfg.MaxWidth, MaxHeight: cfg.MaxHeight}),
		Keys:     m.store,
		Guard:    guard,
		Queue:    queue.New(cfg.MaxConcurrent, cfg.MaxQueued, cfg.QueueTimeout),
		Renderer: m.pool,
		Ready: func(ctx context.Context) error {
			if err := m.store.Ping(ctx); err != nil {
				return fmt.Errorf("database: %w", err)
			}
			if !m.pool.Ready() {
				return errors.New("browser: no browser is ready")
			}
			return nil
		},
	}, m.Log)

	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	m.Addr = ln.Addr().String()
	m.http = &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
	}
	m.served = make(chan error, 1)
	go func() { m.served <- m.http.Serve(ln) }()
	m.Log.InfoContext(ctx, "listening", "addr", m.Addr, "env", cfg.NodeEnv, "browsers", len(m.pool.Stats()),
		"max_concurrent", cfg.MaxConcurrent)
	return nil
}

// Close stops accepting requests, lets those in flight finish within the
// grace period, then closes the browsers and the stores.
func (m *Main) Close() error {
	var errs []error
	if m.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownGrace)
		if err := m.http.Shutdown(ctx); err != nil {
			errs = append(errs, err)
			m.http.Close()
		}
		cancel()
	}
	if m.pool != nil {
		errs = append(errs, m.pool.Close())
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
	}
	return errors.Join(errs...)
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
	secret, k, err := createKey(ctx, m.store, m.Config, keyRequest{name: "development", plan: screenshot.PlanPro})
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stderr, "\nCreated a development API key (%s); it is shown only this once:\n\n    %s\n\n", k.ID, secret)
	return nil
}
