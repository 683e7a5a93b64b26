package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/shutterhq/shutter/internal/browserauth"
	"github.com/shutterhq/shutter/internal/browserpath"
)

// conn is one running browser as the pool sees it: a chromedp context that
// holds the browser, the user agents derived from its version, and a channel
// that closes when the browser is gone.
type conn struct {
	ctx       context.Context
	stop      func()
	lost      chan struct{}
	desktopUA string
	mobileUA  string
	pid       int
	spares    spares // the tab opened ahead for the next render
}

// browser is one long-lived browser: local (launched by the pool) or remote
// (an endpoint of BROWSER_URLS). A supervisor goroutine keeps it running,
// relaunching or reconnecting with backoff when it dies.
type browser struct {
	name   string
	launch func(ctx context.Context) (*conn, error)
	log    *slog.Logger

	mu       sync.Mutex
	cur      *conn
	active   atomic.Int64
	restarts atomic.Int64
	lastErr  atomic.Pointer[string]
}

// current returns the running browser, or nil while it is down (also in the
// moment between its death and the supervisor noticing).
func (b *browser) current() *conn {
	b.mu.Lock()
	c := b.cur
	b.mu.Unlock()
	if c == nil || c.gone() {
		return nil
	}
	return c
}

// gone reports whether the browser has died or disconnected.
func (c *conn) gone() bool {
	if c.ctx.Err() != nil {
		return true
	}
	select {
	case <-c.lost:
		return true
	default:
	}
	if cc := chromedp.FromContext(c.ctx); cc != nil && cc.Browser != nil {
		select {
		case <-cc.Browser.LostConnection:
			return true
		default:
		}
	}
	return false
}

func (b *browser) set(c *conn) {
	b.mu.Lock()
	b.cur = c
	b.mu.Unlock()
}

// supervise runs until ctx ends. changed is signalled whenever the browser
// comes up or goes down.
func (b *browser) supervise(ctx context.Context, changed func()) {
	backoff := 100 * time.Millisecond
	for first := true; ; first = false {
		if ctx.Err() != nil {
			return
		}
		if !first {
			b.restarts.Add(1)
		}
		c, err := b.launch(ctx)
		if err != nil {
			msg := err.Error()
			b.lastErr.Store(&msg)
			b.log.WarnContext(ctx, "browser start failed", "browser", b.name, "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Second)
			continue
		}
		b.lastErr.Store(nil)
		backoff = 100 * time.Millisecond
		b.set(c)
		b.log.InfoContext(ctx, "browser ready", "browser", b.name, "pid", c.pid)
		changed()
		select {
		case <-ctx.Done():
			b.set(nil)
			c.spares.stop()
			c.stop()
			changed()
			return
		case <-c.lost:
		}
		b.set(nil)
		changed()
		b.log.WarnContext(ctx, "browser lost; restarting", "browser", b.name)
		c.spares.stop()
		c.stop()
	}
}

// watch returns a channel that closes when the browser of bctx is gone.
func watch(bctx context.Context) chan struct{} {
	lost := make(chan struct{})
	var lc <-chan struct{}
	if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil {
		lc = c.Browser.LostConnection
	}
	go func() {
		select {
		case <-bctx.Done():
		case <-lc:
		}
		close(lost)
	}()
	return lost
}

// start runs the browser of bctx and reads its version.
func start(bctx context.Context, stop func()) (*conn, error) {
	if err := chromedp.Do(bctx); err != nil {
		stop()
		return nil, err
	}
	v, err := chromedp.CallBrowser(bctx, cdpbrowser.GetVersion, cdp.Empty{})
	if err != nil {
		stop()
		return nil, fmt.Errorf("browser version: %w", err)
	}
	c := &conn{ctx: bctx, stop: stop, lost: watch(bctx)}
	c.desktopUA, c.mobileUA = userAgents(v.UserAgent, v.Product)
	if p := chromedp.FromContext(bctx).Browser.Process(); p != nil {
		c.pid = p.Pid
	}
	return c, nil
}

var majorVersion = regexp.MustCompile(`/(\d+)\.`)

// userAgents derives the desktop and mobile user agents from the browser's
// own: "HeadlessChrome" marks the browser as a bot to many sites, so it
// becomes "Chrome"; the mobile one is Chrome on Android of the same version.
func userAgents(ua, product string) (desktop, mobile string) {
	desktop = strings.Replace(ua, "HeadlessChrome/", "Chrome/", 1)
	major := "120"
	if m := majorVersion.FindStringSubmatch(product); m != nil {
		major = m[1]
	}
	mobile = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + major + ".0.0.0 Mobile Safari/537.36"
	return desktop, mobile
}

// localLauncher starts headless Chromium processes from execPath.
func localLauncher(execPath string, extraFlags []string) func(ctx context.Context) (*conn, error) {
	return func(ctx context.Context) (*conn, error) {
		opts := slices.Clone(chromedp.DefaultExecAllocatorOptions[:])
		opts = append(opts,
			chromedp.ExecPath(execPath),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-domain-reliability", true),
			chromedp.Flag("no-pings", true),
			// WebRTC may only use UDP through a proxy, and ours carries no
			// UDP: a page cannot reach STUN/TURN servers around it.
			chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
			// Keep the browser's own helpers from writing downloads anywhere.
			chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,MediaRouter,OptimizationHints,DownloadBubble"),
			// A page that allocates without end crashes its renderer early
			// instead of taking the machine's memory.
			chromedp.Flag("js-flags", "--max-old-space-size=512"),
		)
		for _, f := range extraFlags {
			name, val, hasVal := strings.Cut(strings.TrimLeft(f, "-"), "=")
			if hasVal {
				opts = append(opts, chromedp.Flag(name, val))
			} else {
				opts = append(opts, chromedp.Flag(name, true))
			}
		}
		// The browser starts with a few harmless variables, not the
		// server's environment: a compromised renderer finds no
		// DATABASE_URL, storage keys or AUTH_SECRET there.
		opts = append(opts, chromedp.NoInheritEnv, chromedp.Env(browserpath.Env()...))
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
		bctx, cancelB := chromedp.NewContext(allocCtx)
		return start(bctx, func() { cancelB(); cancelAlloc() })
	}
}

// remoteLauncher connects to a running browser's DevTools endpoint. With
// tokens, the endpoint must be a Shutter browser supervisor: it first
// proves that it knows a token (a pod that only looks like a browser gets
// nothing), then the connection presents that token.
func remoteLauncher(endpoint string, tokens []string) func(ctx context.Context) (*conn, error) {
	return func(ctx context.Context) (*conn, error) {
		wsURL, opts := endpoint, []remote.Option{remote.WithDialTimeout(5 * time.Second)}
		if len(tokens) > 0 {
			token, err := verifyBrowser(ctx, endpoint, tokens)
			if err != nil {
				return nil, err
			}
			u, _ := url.Parse(endpoint)
			wsURL = "ws://" + u.Host + "/devtools/browser"
			opts = append(opts, remote.NoModifyURL, remote.WithDialHTTPHeader(http.Header{"Authorization": {"Bearer " + token}}))
		}
		allocCtx, cancelAlloc := remote.NewAllocator(ctx, wsURL, opts...)
		bctx, cancelB := chromedp.NewContext(allocCtx)
		return start(bctx, func() { cancelB(); cancelAlloc() })
	}
}

// verifyBrowser asks the endpoint for its proof and returns the token it
// proves.
func verifyBrowser(ctx context.Context, endpoint string, tokens []string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("browser %q: not a URL", endpoint)
	}
	nonce := browserauth.Nonce()
	hello := url.URL{Scheme: "http", Host: u.Host, Path: browserauth.HelloPath, RawQuery: "nonce=" + nonce}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(hctx, http.MethodGet, hello.String(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("browser %s: %w", u.Host, err)
	}
	defer resp.Body.Close()
	var h browserauth.Hello
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&h); err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("browser %s is not a Shutter browser supervisor (status %d)", u.Host, resp.StatusCode)
	}
	token := browserauth.Verify(h, nonce, tokens)
	if token == "" {
		return "", fmt.Errorf("browser %s did not prove that it knows the browser token; not used", u.Host)
	}
	return token, nil
}
