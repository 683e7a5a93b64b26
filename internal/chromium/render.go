package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// errCrashed is the cause of a render whose page crashed.
var errCrashed = errors.New("the page crashed the renderer")

// tab is the state of one render's page, fed by the browser's events.
type tab struct {
	mu         sync.Mutex
	inflight   map[network.RequestID]struct{}
	lastChange time.Time
	blocked    map[string]int // by category
	mainFrame  cdp.FrameID
	docBlocked error            // why the first blocked main-frame document request was refused
	checked    map[string]error // outbound-policy answers by scheme and host, for this render
	content    []string         // enabled content-filter categories (nil without a filter)
}

func (s *tab) event(ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		s.inflight[e.RequestID] = struct{}{}
	case *network.EventLoadingFinished:
		delete(s.inflight, e.RequestID)
	case *network.EventLoadingFailed:
		delete(s.inflight, e.RequestID)
	default:
		return
	}
	s.lastChange = time.Now()
}

// quiet reports whether no request is in flight and none started or ended
// for d.
func (s *tab) quiet(d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) == 0 && time.Since(s.lastChange) >= d
}

// render runs one screenshot on the browser c in a fresh browser context.
func (p *Pool) render(ctx context.Context, c *conn, o *screenshot.Options) (*screenshot.Image, error) {
	st := &tab{inflight: map[network.RequestID]struct{}{}, lastChange: time.Now(), blocked: map[string]int{}}
	var contextOpts []chromedp.CreateBrowserContextOption
	closeProxy := func() {}
	if p.cfg.Outbound != nil {
		targetHost := hostname(o.URL)
		proxyURL, closeFn, err := p.cfg.Outbound.Open(func(host string, err error) {
			if p.cfg.OnBlocked != nil {
				p.cfg.OnBlocked("outbound_policy")
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			st.blocked["outbound_policy"]++
			if strings.EqualFold(host, targetHost) && st.docBlocked == nil {
				st.docBlocked = &screenshot.Error{Code: screenshot.EINVALID,
					Message: fmt.Sprintf("target host %q resolves to an address that is not public", host), Err: err}
			}
		})
		if err != nil {
			return nil, err
		}
		closeProxy = closeFn
		contextOpts = append(contextOpts, func(params *target.CreateBrowserContextParams) {
			params.ProxyServer = proxyURL
			params.ProxyBypassList = "<-loopback>" // loopback goes through the proxy too
		})
	}
	tctx, tcancel := chromedp.NewContext(c.ctx, chromedp.WithNewBrowserContext(contextOpts...))
	// Disposing of the browser context waits for the browser; the client
	// need not, so it happens after the image is returned. Close waits for it.
	p.jobs.Add(1)
	defer func() {
		go func() {
			tcancel()
			closeProxy()
			p.jobs.Done()
		}()
	}()
	rctx, rcancel := context.WithCancelCause(tctx)
	defer rcancel(nil)
	stop := context.AfterFunc(ctx, func() { rcancel(context.Cause(ctx)) })
	defer stop()

	if err := chromedp.Do(rctx); err != nil { // creates the browser context and the tab
		return nil, fmt.Errorf("open tab: %w", err)
	}
	cc := chromedp.FromContext(rctx)
	st.mainFrame = cdp.FrameID(cc.Target.TargetID)
	// Downloads are refused: nothing a page offers is written to disk.
	if _, err := chromedp.CallBrowser(rctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: cc.BrowserContextID}); err != nil {
		return nil, fmt.Errorf("deny downloads: %w", err)
	}
	var content []string
	if p.cfg.Content != nil {
		content = o.ContentCategories()
	}
	st.content = content
	intercept := len(o.BlockRequests) > 0 || len(o.BlockResources) > 0 || len(o.AllowedDomains) > 0 || len(content) > 0 || p.cfg.Check != nil
	defer func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if len(st.blocked) > 0 {
			args := []any{"request_id", screenshot.RequestIDFrom(ctx)}
			for c, n := range st.blocked {
				args = append(args, c, n)
			}
			p.log.DebugContext(ctx, "blocked requests", args...)
		}
	}()
	err := chromedp.Listen(rctx, func(ev any) {
		switch e := ev.(type) {
		case *fetch.EventRequestPaused:
			go p.decide(rctx, st, o, e)
		case *page.EventJavascriptDialogOpening:
			// Dialogs would stall the page; dismiss them, but let the page leave.
			accept := e.Type == page.DialogTypeBeforeunload
			go chromedp.Call(rctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
		case *inspector.EventTargetCrashed:
			rcancel(errCrashed)
		default:
			st.event(ev)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := chromedp.Do(rctx, p.setup(c, o, intercept, content)...); err != nil {
		return nil, fmt.Errorf("set up page: %w", err)
	}

	nctx, ncancel := context.WithTimeout(rctx, p.cfg.LoadTimeout)
	err = chromedp.Do(nctx, chromedp.Navigate(o.URL))
	ncancel()
	if err != nil {
		if cause := context.Cause(rctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = fmt.Errorf("%w: %w", cause, err)
		} else if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, &screenshot.Error{Code: screenshot.ETIMEOUT, Message: fmt.Sprintf("the page did not finish loading within %s", p.cfg.LoadTimeout), Err: err}
		}
		if blocked := st.mainBlocked(); blocked != nil {
			return nil, blocked
		}
		return nil, fmt.Errorf("navigate: %w", err)
	}
	p.waitIdle(rctx, st)

	data, err := chromedp.Run(rctx, capture(o))
	if err != nil {
		// A refused navigation can take the page away under the capture.
		if blocked := st.mainBlocked(); blocked != nil {
			return nil, blocked
		}
		if cause := context.Cause(rctx); errors.Is(cause, errCrashed) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return nil, err
	}
	// A navigation that was refused after the load (a script or a meta
	// refresh) leaves an error page: that is not the page that was asked for.
	if blocked := st.mainBlocked(); blocked != nil {
		return nil, blocked
	}
	return &screenshot.Image{Data: data, Format: o.Format}, nil
}

// setup returns the actions that prepare the tab before navigation.
func (p *Pool) setup(c *conn, o *screenshot.Options, intercept bool, content []string) []chromedp.Action[chromedp.Void] {
	orientation := &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypePortraitPrimary, Angle: 0}
	if !o.IsMobile || o.IsLandscape {
		orientation = &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypeLandscapePrimary, Angle: 90}
		if !o.IsMobile {
			orientation.Angle = 0
		}
	}
	ua := o.UserAgent
	if ua == "" {
		ua = c.desktopUA
		if o.IsMobile {
			ua = c.mobileUA
		}
	}
	steps := []chromedp.Action[chromedp.Void]{
		call(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: int64(o.Width), Height: int64(o.Height), DeviceScaleFactor: o.DeviceScaleFactor,
			Mobile: o.IsMobile, ScreenOrientation: orientation,
		}),
		call(emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua}),
		call(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{
			{Name: "prefers-color-scheme", Value: o.ColorScheme},
			{Name: "prefers-reduced-motion", Value: o.ReducedMotion},
		}}),
	}
	if o.HasTouch {
		steps = append(steps, call(emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: true, MaxTouchPoints: 5}))
	}
	if o.BypassCSP {
		steps = append(steps, call(page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true}))
	}
	if len(o.Headers) > 0 {
		h := network.Headers{}
		for _, x := range o.Headers {
			h[x.Name] = x.Value
		}
		steps = append(steps, call(network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h}))
	}
	if len(o.Cookies) > 0 {
		steps = append(steps, call(network.SetCookies, network.SetCookiesParams{Cookies: cookieParams(o.Cookies)}))
	}
	if intercept {
		steps = append(steps, call(fetch.Enable, fetch.EnableParams{}))
	}
	if len(content) > 0 {
		if css := p.cfg.Content.CSS(content, hostname(o.URL)); css != "" {
			// An isolated world's script adopts a constructed stylesheet in
			// every document before it is parsed: through the DevTools
			// protocol, so the page's Content-Security-Policy does not apply.
			src, _ := json.Marshal(css)
			steps = append(steps, call(page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
				Source: fmt.Sprintf(hideScript, src), WorldName: "shutter"}))
		}
	}
	return steps
}

// hideScript adopts the filter stylesheet, and adopts it again if the page
// replaces the document's adopted stylesheets.
const hideScript = `(() => {
	const sheet = new CSSStyleSheet();
	sheet.replaceSync(%s);
	const adopt = () => {
		if (!document.adoptedStyleSheets.includes(sheet)) {
			document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
		}
	};
	adopt();
	document.addEventListener("DOMContentLoaded", adopt);
	addEventListener("load", adopt);
})();`

func hostname(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Hostname()
}

// call wraps one protocol command whose result is not needed as an action.
func call[P, R any](cmd cdp.Command[P, R], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cmd, params)
		return err
	})
}

func cookieParams(cs []*http.Cookie) []*network.CookieParam {
	out := make([]*network.CookieParam, 0, len(cs))
	for _, c := range cs {
		cp := &network.CookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HttpOnly}
		switch c.SameSite {
		case http.SameSiteStrictMode:
			cp.SameSite = network.CookieSameSiteStrict
		case http.SameSiteLaxMode:
			cp.SameSite = network.CookieSameSiteLax
		case http.SameSiteNoneMode:
			cp.SameSite = network.CookieSameSiteNone
		}
		switch {
		case c.MaxAge > 0:
			cp.Expires = cdp.TimeSinceEpoch(time.Now().Add(time.Duration(c.MaxAge) * time.Second).Unix())
		case !c.Expires.IsZero():
			cp.Expires = cdp.TimeSinceEpoch(c.Expires.Unix())
		}
		out = append(out, cp)
	}
	return out
}

// check asks the outbound policy once per scheme and host of a render: a
// page loads many resources from few hosts, and each answer costs a DNS
// lookup. (The per-render proxy checks every connection again.)
func (s *tab) check(policy func(string) error, rawURL string) error {
	key := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		key = u.Scheme + "://" + u.Host
	}
	s.mu.Lock()
	err, ok := s.checked[key]
	s.mu.Unlock()
	if ok {
		return err
	}
	err = policy(rawURL)
	s.mu.Lock()
	if s.checked == nil {
		s.checked = map[string]error{}
	}
	s.checked[key] = err
	s.mu.Unlock()
	return err
}

func (s *tab) mainBlocked() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.docBlocked
}

// decide lets a paused request go on or fails it.
func (p *Pool) decide(ctx context.Context, st *tab, o *screenshot.Options, e *fetch.EventRequestPaused) {
	mainDoc := e.ResourceType == network.ResourceTypeDocument && e.FrameID == st.mainFrame
	var why error
	category := ""
	if mainDoc && len(o.AllowedDomains) > 0 {
		if u, err := url.Parse(e.Request.URL); err != nil || !screenshot.DomainAllowed(o.AllowedDomains, u.Hostname()) {
			host := ""
			if u != nil {
				host = u.Hostname()
			}
			why = screenshot.Errorf(screenshot.EFORBIDDEN, "the page navigated to %q, which this API key may not capture", host)
			category = "key_domains"
		}
	}
	if why == nil {
		if msg, c := blockReason(o, string(e.ResourceType), e.Request.URL); msg != "" {
			why, category = screenshot.Errorf(screenshot.EINVALID, "%s", msg), c
		}
	}
	if why == nil && len(st.content) > 0 && !mainDoc {
		subframe := e.ResourceType == network.ResourceTypeDocument
		if c, blocked := p.cfg.Content.Block(st.content, e.Request.URL, o.URL, string(e.ResourceType), subframe); blocked {
			why, category = screenshot.Errorf(screenshot.EINVALID, "blocked by the %s filter", c), c
		}
	}
	if why == nil && p.cfg.Check != nil {
		if err := st.check(p.cfg.Check, e.Request.URL); err != nil {
			why, category = err, "outbound_policy"
		}
	}
	if why == nil {
		chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
		return
	}
	st.mu.Lock()
	st.blocked[category]++
	if mainDoc && st.docBlocked == nil {
		st.docBlocked = why
	}
	st.mu.Unlock()
	if p.cfg.OnBlocked != nil {
		p.cfg.OnBlocked(category)
	}
	chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
}

// blockReason says why block_resources or block_requests refuse a request,
// and which of them does; "" when they let it through.
func blockReason(o *screenshot.Options, resourceType, url string) (why, category string) {
	rt := strings.ToLower(resourceType)
	for _, b := range o.BlockResources {
		if b == rt {
			return "the page itself is blocked by block_resources=" + b, "block_resources"
		}
	}
	for _, pat := range o.BlockRequests {
		if screenshot.MatchPattern(pat, url) {
			return "the page itself is blocked by the block_requests pattern " + pat, "block_requests"
		}
	}
	return "", ""
}

// waitIdle waits after the load event until the network has been quiet for
// IdleTime, at most IdleMax.
func (p *Pool) waitIdle(ctx context.Context, st *tab) {
	deadline := time.Now().Add(p.cfg.IdleMax)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !st.quiet(p.cfg.IdleTime) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// MaxCaptureSide bounds an element capture: larger images exceed what the
// compositor can produce in one piece and what a client wants in an <img>.
const MaxCaptureSide = 16384

// box is an element's border box in CSS pixels of the document.
type box struct {
	X, Y, W, H float64
	Err        string
}

// boxScript finds the element and returns its box relative to the document,
// or null; a selector that does not parse gives Err.
const boxScript = `(function(sel){
	let el;
	try { el = document.querySelector(sel); } catch (e) { return {Err: String(e.message)}; }
	if (!el) return {Err: "none"};
	const r = el.getBoundingClientRect();
	return {X: r.left + window.scrollX, Y: r.top + window.scrollY, W: r.width, H: r.height};
})(%s)`

// capture takes the screenshot: the viewport, or the selector's element.
func capture(o *screenshot.Options) chromedp.Action[[]byte] {
	return func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormat(o.Format)}
		if o.Format != screenshot.PNG {
			q := int64(o.Quality)
			params.Quality = &q
		}
		if o.Selector != "" {
			sel, _ := json.Marshal(o.Selector)
			b, err := chromedp.Evaluate[box](fmt.Sprintf(boxScript, sel))(ctx, t)
			if err != nil {
				return nil, fmt.Errorf("find selector: %w", err)
			}
			switch {
			case b.Err == "none":
				return nil, screenshot.Errorf(screenshot.EUNPROCESSABLE, "selector %q matched no element on the page", o.Selector)
			case b.Err != "":
				return nil, screenshot.Errorf(screenshot.EINVALID, "parameter selector is not a valid CSS selector: %s", b.Err)
			case b.W < 1 || b.H < 1:
				return nil, screenshot.Errorf(screenshot.EUNPROCESSABLE, "selector %q matched an element with no visible size", o.Selector)
			}
			// Whole device pixels, so the image is exactly the element's box.
			x, y := math.Floor(b.X), math.Floor(b.Y)
			w, h := math.Ceil(b.X+b.W)-x, math.Ceil(b.Y+b.H)-y
			if dsf := max(o.DeviceScaleFactor, 1); w*dsf > MaxCaptureSide || h*dsf > MaxCaptureSide {
				return nil, screenshot.Errorf(screenshot.EUNPROCESSABLE,
					"selector %q matched an element of %.0f×%.0f CSS pixels; an image may be at most %d device pixels on a side",
					o.Selector, w, h, MaxCaptureSide)
			}
			params.Clip = &page.Viewport{X: x, Y: y, Width: w, Height: h, Scale: 1}
			beyond := true
			params.CaptureBeyondViewport = &beyond
		}
		res, err := cdp.Call(ctx, t, page.CaptureScreenshot, params)
		if err != nil {
			return nil, fmt.Errorf("capture: %w", err)
		}
		return res.Data, nil
	}
}
