// Package browserd is the browser supervisor of the browser pods
// (`server browser`): it runs Chromium with DevTools on loopback only,
// restarts it when it dies, and exposes DevTools on the pod's port only to
// clients that present the browser token. It proves to the API that it
// knows the token before the API sends it, answers /healthz and /readyz,
// exports Chromium's memory, restarts and busy pages as metrics, and on
// SIGTERM stops taking new sessions while the existing ones finish.
package browserd

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shutterhq/shutter/internal/browserauth"
	"github.com/shutterhq/shutter/internal/browserpath"
)

// Config configures a Supervisor.
type Config struct {
	// ExecPath is the Chromium binary; Flags are added to its command line
	// (the supervisor adds the DevTools address, port and profile itself).
	ExecPath string
	Flags    []string
	// Tokens are the accepted browser tokens, the current one first.
	Tokens []string
	// Listen is the address of the pod's port (":9222").
	Listen string
	// DrainTimeout bounds the wait for open sessions after SIGTERM.
	DrainTimeout time.Duration
}

// Supervisor runs one Chromium and guards its DevTools endpoint.
type Supervisor struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	devtools string // host:port of Chromium's DevTools on loopback, "" while down
	wsPath   string // the browser's websocket path
	pid      int

	draining atomic.Bool
	sessions atomic.Int64
	busy     atomic.Int64
	restarts prometheus.Counter
	registry *prometheus.Registry

	Addr string // the listening address once Start has returned
	srv  *http.Server
}

// New returns a supervisor; Run starts it.
func New(cfg Config, log *slog.Logger) (*Supervisor, error) {
	if len(cfg.Tokens) == 0 || len(cfg.Tokens[0]) < 16 {
		return nil, errors.New("BROWSER_TOKEN: required, at least 16 characters")
	}
	if cfg.Listen == "" {
		cfg.Listen = ":9222"
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 60 * time.Second
	}
	s := &Supervisor{cfg: cfg, log: log, registry: prometheus.NewRegistry()}
	s.restarts = prometheus.NewCounter(prometheus.CounterOpts{Name: "shutter_browser_restarts_total", Help: "Times Chromium was started again after it stopped."})
	gauge := func(name, help string, f func() float64) {
		s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	gauge("shutter_browser_busy_pages", "Pages open in Chromium: renders in flight.", func() float64 { return float64(s.busy.Load()) })
	gauge("shutter_browser_sessions", "DevTools sessions open through the supervisor.", func() float64 { return float64(s.sessions.Load()) })
	gauge("shutter_browser_memory_bytes", "Resident memory of Chromium and its child processes.", func() float64 { return float64(s.memory()) })
	gauge("shutter_browser_up", "1 while Chromium answers.", func() float64 {
		if s.endpoint() != "" {
			return 1
		}
		return 0
	})
	s.registry.MustRegister(s.restarts)
	return s, nil
}

// Start listens on the pod's port and starts Chromium under supervision
// until ctx ends.
func (s *Supervisor) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("browser supervisor: %w", err)
	}
	s.Addr = ln.Addr().String()
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	go s.supervise(ctx)
	go s.watchBusy(ctx)
	return nil
}

// Drain stops taking new sessions and waits, at most DrainTimeout, until
// the open ones have ended; then it closes the listener. Chromium stops
// with the context given to Start.
func (s *Supervisor) Drain() {
	s.draining.Store(true)
	deadline := time.Now().Add(s.cfg.DrainTimeout)
	for s.sessions.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := s.sessions.Load(); n > 0 {
		s.log.Warn("drain timeout; closing open sessions", "sessions", n)
	}
	s.srv.Close()
}

func (s *Supervisor) endpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.devtools
}

// routes: probes and metrics are open; everything of DevTools needs the
// token.
func (s *Supervisor) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case s.draining.Load():
			reply(w, http.StatusServiceUnavailable, "draining")
		case s.endpoint() == "":
			reply(w, http.StatusServiceUnavailable, "browser starting")
		default:
			reply(w, http.StatusOK, "ready")
		}
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+browserauth.HelloPath, func(w http.ResponseWriter, r *http.Request) {
		nonce := r.URL.Query().Get("nonce")
		if len(nonce) < 16 || len(nonce) > 128 {
			reply(w, http.StatusBadRequest, "nonce: 16 to 128 characters")
			return
		}
		h := browserauth.Hello{Browser: "shutter"}
		for _, t := range s.cfg.Tokens {
			h.Proofs = append(h.Proofs, browserauth.Proof(t, nonce))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h)
	})
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			ep := s.endpoint()
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", ep
			if pr.In.URL.Path == "/devtools/browser" || strings.HasPrefix(pr.In.URL.Path, "/devtools/browser/") {
				s.mu.Lock()
				pr.Out.URL.Path = s.wsPath
				s.mu.Unlock()
			}
			pr.Out.Host = ep // DevTools answers only a loopback Host
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Origin")
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			reply(w, http.StatusBadGateway, "browser unavailable")
		},
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			reply(w, http.StatusUnauthorized, "a browser token is required")
			return
		}
		if s.endpoint() == "" {
			reply(w, http.StatusServiceUnavailable, "browser starting")
			return
		}
		if isUpgrade(r) {
			if s.draining.Load() {
				reply(w, http.StatusServiceUnavailable, "draining")
				return
			}
			s.sessions.Add(1)
			defer s.sessions.Add(-1)
		}
		proxy.ServeHTTP(w, r)
	})
	return mux
}

func reply(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(msg + "\n"))
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// authorized compares the bearer token with every accepted token in
// constant time.
func (s *Supervisor) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	match := 0
	for _, t := range s.cfg.Tokens {
		match |= subtle.ConstantTimeCompare([]byte(got), []byte(t))
	}
	return match == 1
}

// supervise keeps Chromium running until ctx ends.
func (s *Supervisor) supervise(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			s.restarts.Inc()
		}
		started := time.Now()
		if err := s.runOnce(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("browser stopped; restarting", "err", err, "retry_in", backoff)
		}
		if time.Since(started) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// runOnce starts Chromium on a loopback port of its choosing and waits
// until it exits or ctx ends.
func (s *Supervisor) runOnce(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "shutter-browser-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	args := append([]string{}, s.cfg.Flags...)
	args = append(args, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--user-data-dir="+dir)
	cmd := exec.Command(s.cfg.ExecPath, args...) //nolint:gosec // the browser and its flags come from the operator's settings
	cmd.Env = browserpath.Env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.cfg.ExecPath, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole process group
		<-exited                                            //nolint:errcheck // the process is gone; how it ended does not matter here
	}
	// Chromium writes the port it chose, and the browser's path, here.
	active := filepath.Join(dir, "DevToolsActivePort")
	for deadline := time.Now().Add(30 * time.Second); ; {
		if b, err := os.ReadFile(active); err == nil {
			if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) == 2 {
				if _, err := strconv.Atoi(lines[0]); err == nil {
					s.mu.Lock()
					s.devtools, s.wsPath, s.pid = "127.0.0.1:"+lines[0], lines[1], cmd.Process.Pid
					s.mu.Unlock()
					break
				}
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before DevTools answered: %v", err)
		case <-ctx.Done():
			stop()
			return nil
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return errors.New("DevTools did not start within 30 s")
		}
	}
	s.log.Info("browser ready", "pid", cmd.Process.Pid)
	defer func() {
		s.mu.Lock()
		s.devtools, s.wsPath, s.pid = "", "", 0
		s.mu.Unlock()
	}()
	select {
	case err := <-exited:
		return fmt.Errorf("exited: %v", err)
	case <-ctx.Done():
		stop()
		return nil
	}
}

// watchBusy counts Chromium's open pages every second.
func (s *Supervisor) watchBusy(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ep := s.endpoint()
		if ep == "" {
			s.busy.Store(0)
			continue
		}
		resp, err := client.Get((&url.URL{Scheme: "http", Host: ep, Path: "/json/list"}).String())
		if err != nil {
			continue
		}
		var targets []struct{ Type string }
		_ = json.NewDecoder(resp.Body).Decode(&targets) // a bad answer counts as no page
		resp.Body.Close()
		n := 0
		for _, tg := range targets {
			if tg.Type == "page" {
				n++
			}
		}
		s.busy.Store(int64(n))
	}
}

// memory is the resident memory of Chromium's process group, from /proc.
func (s *Supervisor) memory() int64 {
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	if pid == 0 {
		return 0
	}
	entries, _ := os.ReadDir("/proc")
	var total int64
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pg, err := syscall.Getpgid(p); err != nil || pg != pid {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "statm"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) > 1 {
			if pages, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				total += pages * int64(os.Getpagesize())
			}
		}
	}
	return total
}
