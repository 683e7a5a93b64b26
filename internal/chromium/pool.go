// Package chromium renders screenshots with headless Chromium through the
// DevTools protocol. It owns a pool of long-lived browsers, local (launched
// here) or remote (DevTools endpoints), and gives every request a fresh
// browser context that is disposed afterwards.
package chromium

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Config configures a Pool.
type Config struct {
	// ExecPath is the browser binary for local browsers.
	ExecPath string
	// Local is how many local browsers to launch when URLs is empty.
	Local int
	// URLs are DevTools endpoints of running browsers; when set, nothing is
	// launched locally. A dns://name:port URL stands for every address the
	// name resolves to, looked up again every DiscoveryInterval: browsers
	// are added and dropped as the addresses come and go (a headless
	// Service of browser pods).
	URLs []string
	// DiscoveryInterval is the period of dns:// lookups; default 10 s.
	DiscoveryInterval time.Duration
	// BrowserTokens, when set, make every remote browser prove that it is
	// a Shutter browser supervisor knowing one of them, and authenticate
	// the connection with the token it proved (the current one first).
	BrowserTokens []string
	// Resolver resolves dns:// names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Flags are extra command-line flags for local browsers.
	Flags []string

	// Timeout bounds one render from start to image.
	Timeout time.Duration
	// LoadTimeout bounds the wait for the page's load event.
	LoadTimeout time.Duration
	// IdleTime is how long the network must be quiet after the load event,
	// and IdleMax the most that the wait for it may take.
	IdleTime, IdleMax time.Duration
	// BrowserWait is how long a render waits for a browser that is
	// restarting before it gives up with ErrUnavailable.
	BrowserWait time.Duration
	// Check, when set, decides for every request that the browser makes
	// whether it may go out; a refusal fails the request in the browser.
	Check func(url string) error
	// OnPhase, when set, is told how long each phase of a render took, as
	// each ends (a render that fails is told up to its failure): open (proxy, browser context, tab), setup (emulation,
	// interception, scripts), navigate (to the load event), wait (the
	// waits and interactions after it), capture (image or PDF, decoded).
	OnPhase func(phase string, d time.Duration)
	// OnBlocked, when set, is told the category of every request blocked in
	// the browser: block_requests, block_resources, outbound_policy,
	// key_domains, or a content-filter category (ads, trackers, cookies).
	OnBlocked func(category string)
	// Content is the filter behind block_ads, block_trackers and
	// block_cookie_banners; nil leaves those switches without effect.
	Content screenshot.ContentFilter
	// Consent, when set, answers consent dialogs (opt out) for
	// block_cookie_banners, before Content's rules hide what is left.
	Consent *ConsentEngine
	// Outbound, when set, gives every render a proxy of its own through
	// which the browser context sends all of its traffic (the pinning wall
	// of the outbound policy).
	Outbound screenshot.Outbound
}

func (c *Config) defaults() {
	if c.Local <= 0 {
		c.Local = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.LoadTimeout <= 0 || c.LoadTimeout > c.Timeout {
		c.LoadTimeout = c.Timeout
	}
	if c.IdleTime <= 0 {
		c.IdleTime = 30 * time.Millisecond
	}
	if c.IdleMax <= 0 {
		c.IdleMax = 2 * time.Second
	}
	if c.BrowserWait <= 0 {
		c.BrowserWait = 10 * time.Second
	}
	if c.DiscoveryInterval <= 0 {
		c.DiscoveryInterval = 10 * time.Second
	}
}

// Pool is a set of browsers that renders screenshots.
type Pool struct {
	cfg       Config
	log       *slog.Logger
	static    []*browser
	discovery []string // host:port of dns:// URLs

	bmu      sync.Mutex
	browsers map[string]*browser // by name
	stops    map[string]context.CancelFunc

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // supervisors
	jobs   sync.WaitGroup // context disposals still running

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever a browser comes or goes
}

var _ screenshot.Renderer = (*Pool)(nil)

// New returns a pool; Start launches or connects its browsers.
func New(cfg Config, log *slog.Logger) (*Pool, error) {
	cfg.defaults()
	p := &Pool{cfg: cfg, log: log, changed: make(chan struct{}), browsers: map[string]*browser{}, stops: map[string]context.CancelFunc{}}
	if len(cfg.URLs) > 0 {
		for _, u := range cfg.URLs {
			if hostport, ok := strings.CutPrefix(u, "dns://"); ok {
				if _, _, err := net.SplitHostPort(hostport); err != nil {
					return nil, fmt.Errorf("chromium: %q: want dns://name:port", u)
				}
				p.discovery = append(p.discovery, hostport)
				continue
			}
			p.static = append(p.static, &browser{name: u, launch: remoteLauncher(u, cfg.BrowserTokens), log: log})
		}
	} else {
		if cfg.ExecPath == "" {
			return nil, errors.New("chromium: no browser binary and no BROWSER_URLS")
		}
		for i := range cfg.Local {
			p.static = append(p.static, &browser{name: fmt.Sprintf("local-%d", i), launch: localLauncher(cfg.ExecPath, cfg.Flags), log: log})
		}
	}
	return p, nil
}

// add starts supervising b.
func (p *Pool) add(b *browser) {
	p.bmu.Lock()
	defer p.bmu.Unlock()
	if _, ok := p.browsers[b.name]; ok {
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	p.browsers[b.name] = b
	p.stops[b.name] = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		b.supervise(ctx, func() {
			if c := b.current(); c != nil {
				p.prepare(c) // the first render finds its tab open too
			}
			p.notify()
		})
	}()
}

// drop drains the browser of that name: it takes no new render at once,
// the renders in flight on it finish (at most the render timeout and a
// margin), then it is disconnected. A browser pod that leaves discovery
// (a rollout, a node drain) loses no render this way.
func (p *Pool) drop(name string) {
	p.bmu.Lock()
	b, ok := p.browsers[name]
	stop := p.stops[name]
	delete(p.stops, name)
	delete(p.browsers, name)
	p.bmu.Unlock()
	if !ok {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		deadline := time.Now().Add(p.cfg.Timeout + 5*time.Second)
		for b.active.Load() > 0 && time.Now().Before(deadline) {
			select {
			case <-p.ctx.Done():
				deadline = time.Now() // closing: Close waits for the renders itself
			case <-time.After(50 * time.Millisecond):
			}
		}
		if n := b.active.Load(); n > 0 {
			p.log.Warn("browser drained with renders still in flight", "browser", name, "renders", n)
		}
		stop()
	}()
}

func (p *Pool) list() []*browser {
	p.bmu.Lock()
	defer p.bmu.Unlock()
	out := make([]*browser, 0, len(p.browsers))
	for _, name := range slices.Sorted(maps.Keys(p.browsers)) {
		out = append(out, p.browsers[name])
	}
	return out
}

// discover resolves every dns:// name and brings the browser set in line
// with the addresses found. A failed lookup keeps the current set.
func (p *Pool) discover(ctx context.Context) {
	r := p.cfg.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	want := map[string]bool{}
	for _, hp := range p.discovery {
		host, port, _ := net.SplitHostPort(hp)
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err := r.LookupHost(lctx, host)
		cancel()
		if err != nil {
			p.log.WarnContext(ctx, "browser discovery failed; keeping the current browsers", "name", host, "err", err)
			return
		}
		for _, a := range addrs {
			want["http://"+net.JoinHostPort(a, port)] = true
		}
	}
	p.bmu.Lock()
	var gone []string
	for name := range p.browsers {
		if !want[name] && !slices.ContainsFunc(p.static, func(b *browser) bool { return b.name == name }) {
			gone = append(gone, name)
		}
	}
	p.bmu.Unlock()
	for _, name := range gone {
		p.log.InfoContext(ctx, "browser gone from discovery; draining it", "browser", name)
		p.drop(name)
	}
	for u := range want {
		p.add(&browser{name: u, launch: remoteLauncher(u, p.cfg.BrowserTokens), log: p.log})
	}
	if len(gone) > 0 {
		p.notify()
	}
}

// Start starts the supervisors and waits until at least one browser is ready
// or ctx ends. The browsers keep running after Start returns, until Close.
func (p *Pool) Start(ctx context.Context) error {
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for _, b := range p.static {
		p.add(b)
	}
	if len(p.discovery) > 0 {
		p.discover(ctx)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(p.cfg.DiscoveryInterval)
			defer t.Stop()
			for {
				select {
				case <-p.ctx.Done():
					return
				case <-t.C:
					p.discover(p.ctx)
				}
			}
		}()
	}
	if len(p.static) == 0 {
		// Discovered browsers come and go; readiness reports whether any is
		// there.
		return nil
	}
	if _, err := p.pick(ctx); err != nil {
		return fmt.Errorf("chromium: no browser became ready: %w (last error: %s)", err, p.lastError())
	}
	return nil
}

// Close stops every browser after the renders in flight have released their
// contexts.
func (p *Pool) Close() error {
	if p.cancel == nil {
		return nil
	}
	p.jobs.Wait()
	p.cancel()
	p.wg.Wait()
	return nil
}

func (p *Pool) notify() {
	p.mu.Lock()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// pick returns the ready browser with the fewest renders in flight, waiting
// for one to come up until ctx ends.
func (p *Pool) pick(ctx context.Context) (*browser, error) {
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		var best *browser
		for _, b := range p.list() {
			if b.current() == nil {
				continue
			}
			if best == nil || b.active.Load() < best.active.Load() {
				best = b
			}
		}
		if best != nil {
			return best, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

func (p *Pool) lastError() string {
	for _, b := range p.list() {
		if e := b.lastErr.Load(); e != nil {
			return *e
		}
	}
	return "none"
}

// BrowserStats describes one browser of the pool.
type BrowserStats struct {
	Name     string `json:"name"`
	Ready    bool   `json:"ready"`
	Active   int64  `json:"active"`
	Restarts int64  `json:"restarts"`
	PID      int    `json:"pid,omitempty"`
}

// Stats describes every browser.
func (p *Pool) Stats() []BrowserStats {
	bs := p.list()
	out := make([]BrowserStats, 0, len(bs))
	for _, b := range bs {
		s := BrowserStats{Name: b.name, Active: b.active.Load(), Restarts: b.restarts.Load()}
		if c := b.current(); c != nil {
			s.Ready, s.PID = true, c.pid
		}
		out = append(out, s)
	}
	return out
}

// Ready reports whether at least one browser can take a render.
func (p *Pool) Ready() bool {
	for _, b := range p.list() {
		if b.current() != nil {
			return true
		}
	}
	return false
}

// Render takes the screenshot that o describes.
func (p *Pool) Render(ctx context.Context, o *screenshot.Options) (*screenshot.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, p.cfg.BrowserWait)
	b, err := p.pick(wctx)
	wcancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, classify(ctx, err)
		}
		return nil, &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "no browser is available; try again shortly",
			RetryAfter: 2 * time.Second, Err: err}
	}
	c := b.current()
	if c == nil { // lost between pick and now
		return nil, errBrowserLost(nil)
	}
	b.active.Add(1)
	defer b.active.Add(-1)
	img, err := p.render(ctx, c, o)
	if err != nil {
		var exit *exec.ExitError
		if c.gone() || errors.As(err, &exit) {
			return nil, errBrowserLost(err)
		}
		return nil, classify(ctx, err)
	}
	return img, nil
}

func errBrowserLost(err error) error {
	return &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the browser stopped during the render; try again",
		RetryAfter: time.Second, Err: err}
}
