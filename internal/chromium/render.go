package chromium

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
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
	docBlocked error                      // why the first blocked main-frame document request was refused
	checked    map[string]error           // outbound-policy answers by scheme and host, for this render
	content    []string                   // enabled content-filter categories (nil without a filter)
	life       map[string]bool            // main-frame lifecycle events seen, by loader and name
	consent    *consentState              // the consent engine's progress, when it runs
	lazy       map[string][]string        // the hiding rules documents ask for, by class or id
	lookups    int                        // documents' questions for them not yet answered
	hideCtx    runtime.ExecutionContextID // the main document's hiding world
	// proxyUser and proxyPassword answer the per-render proxy's challenge.
	proxyUser, proxyPassword string
	changed                  chan struct{} // closed and replaced when a request or a lifecycle event comes or goes
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
	case *page.EventLifecycleEvent:
		if e.FrameID != s.mainFrame {
			return
		}
		s.life[string(e.LoaderID)+"/"+e.Name] = true
		s.wake()
		return
	default:
		return
	}
	s.lastChange = time.Now()
	s.wake()
}

// wake tells the waits that something changed; s.mu is held.
func (s *tab) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitLifecycle waits for the main frame's lifecycle event of that name
// for the navigation of loader.
func (s *tab) waitLifecycle(ctx context.Context, loader cdp.LoaderID, name string) error {
	for {
		s.mu.Lock()
		seen, ch := s.life[string(loader)+"/"+name], s.changed
		s.mu.Unlock()
		if seen {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// untilQuiet is how long the network must stay as it is to have been
// quiet for d (0: it has been; -1: a request is in flight), and a channel
// closed at the next change.
func (s *tab) untilQuiet(d time.Duration) (time.Duration, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inflight) > 0 {
		return -1, s.changed
	}
	return max(d-time.Since(s.lastChange), 0), s.changed
}

// render runs one screenshot on the browser c in a fresh browser context.
func (p *Pool) render(ctx context.Context, c *conn, o *screenshot.Options) (*screenshot.Image, error) {
	st := &tab{inflight: map[network.RequestID]struct{}{}, lastChange: time.Now(), blocked: map[string]int{},
		life: map[string]bool{}, changed: make(chan struct{})}
	if p.cfg.Content != nil {
		st.content = o.ContentCategories()
	}
	if o.BlockCookieBanners && p.cfg.Consent != nil {
		st.consent = &consentState{changed: make(chan struct{})}
	}
	clock := p.phases()
	rctx, rcancel, done, err := p.openTab(ctx, c, o, st)
	if err != nil {
		return nil, err
	}
	clock("open")
	defer done()
	defer p.logBlocked(ctx, st)
	if err := chromedp.Listen(rctx, p.events(rctx, rcancel, st, o)); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	css, lazy := p.stylesheet(o, st.content)
	st.lazy = lazy
	setup := p.setup(c, o, p.intercepts(o, st), css, len(lazy) > 0)
	if st.consent != nil {
		setup = append(setup, chromedp.Steps(consentSetup(p.cfg.Consent)...))
	}
	if err := chromedp.Do(rctx, together(setup...)); err != nil {
		if strings.Contains(err.Error(), "Invalid cookie fields") {
			// The parser checks what it can; the browser has the last word.
			return nil, &screenshot.Error{Code: screenshot.EINVALID, Message: "parameter cookies: the browser refuses a cookie for this URL", Err: err}
		}
		return nil, fmt.Errorf("set up page: %w", err)
	}
	clock("setup")
	for _, step := range p.steps(o, st) {
		if err := chromedp.Do(rctx, chromedp.Func(step.run)); err != nil {
			return nil, p.stepFailed(ctx, rctx, st, step.name, err)
		}
		if step.name == "navigate" {
			clock("navigate")
			if c.spares.opensEarly() {
				// Renders come back to back: the next one's tab is opened
				// while this one waits and captures (not during its set-up
				// and navigation, which it would slow).
				p.prepare(c)
			}
		}
	}
	clock("wait")
	out, err := chromedp.Run(rctx, output(o))
	if err != nil {
		return nil, p.stepFailed(ctx, rctx, st, "capture", err)
	}
	clock("capture")
	// A navigation that was refused after the load (a script or a meta
	// refresh) leaves an error page: that is not the page that was asked for.
	if blocked := st.mainBlocked(); blocked != nil {
		return nil, blocked
	}
	return &screenshot.Image{Data: out.data, Format: o.Format, Truncated: out.truncated}, nil
}

// phases returns a clock that tells OnPhase the time since its last tick.
func (p *Pool) phases() func(phase string) {
	if p.cfg.OnPhase == nil {
		return func(string) {}
	}
	last := time.Now()
	return func(phase string) {
		now := time.Now()
		p.cfg.OnPhase(phase, now.Sub(last))
		last = now
	}
}

// openTab gives the render its own browser context and tab: the spare
// opened ahead (after the previous render, or while it waited and captured
// when renders come back to back; a spare still being opened is waited
// for) when there is one, else one opened now — each with its own proxy
// session under the outbound policy and downloads refused.
// done disposes of it all after the image is returned: the browser's
// disposal is not the client's wait (Close waits for it).
func (p *Pool) openTab(ctx context.Context, c *conn, o *screenshot.Options, st *tab) (rctx context.Context, rcancel context.CancelCauseFunc, done func(), err error) {
	sp := c.spares.take(ctx)
	fresh := sp == nil
	if fresh {
		if sp, err = p.newSpare(c); err != nil {
			return nil, nil, nil, err
		}
	}
	if fresh {
		// A render that found no spare (several at once, or after a
		// failed one) starts the chain again at once.
		defer p.prepare(c)
	}
	refuse := func(host string, err error) { p.proxyRefused(st, o, host, err) }
	sp.refuse.Store(&refuse)
	p.jobs.Add(1)
	rctx, rcancel = context.WithCancelCause(sp.tctx)
	stop := context.AfterFunc(ctx, func() { rcancel(context.Cause(ctx)) })
	done = func() {
		stop()
		rcancel(nil)
		go func() {
			sp.dispose()
			p.jobs.Done()
		}()
		c.spares.ended()
		p.prepare(c) // unless the render opened it early
	}
	err = rctx.Err() // a spare whose browser went while it waited
	if fresh {
		err = sp.open(rctx) // under the request's deadline
	}
	if err != nil {
		done()
		return nil, nil, nil, fmt.Errorf("open tab: %w", err)
	}
	st.proxyUser, st.proxyPassword, st.mainFrame = sp.user, sp.pass, sp.mainFrame
	return rctx, rcancel, done, nil
}

// proxyRefused counts a connection the render's proxy refused; one to the
// target itself is why the render fails.
func (p *Pool) proxyRefused(st *tab, o *screenshot.Options, host string, err error) {
	if p.cfg.OnBlocked != nil {
		p.cfg.OnBlocked("outbound_policy")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.blocked["outbound_policy"]++
	if strings.EqualFold(host, o.Host()) && st.docBlocked == nil {
		st.docBlocked = &screenshot.Error{Code: screenshot.EINVALID,
			Message: fmt.Sprintf("target host %q resolves to an address that is not public", host), Err: err}
	}
}

// intercepts reports whether the render pauses the page's requests: for
// blocking, the key's domains, the outbound check, and headers (added only
// to requests for the target's own origin, so that an Authorization meant
// for the target does not reach the third parties the page loads from).
func (p *Pool) intercepts(o *screenshot.Options, st *tab) bool {
	return len(o.BlockRequests) > 0 || len(o.BlockResources) > 0 || len(o.AllowedDomains) > 0 || len(st.content) > 0 ||
		p.cfg.Check != nil || len(o.Headers) > 0
}

// events routes the tab's events: paused requests, the proxy's challenge,
// the consent engine's messages, dialogs, a crash, and the network
// activity the waits read.
func (p *Pool) events(rctx context.Context, rcancel context.CancelCauseFunc, st *tab, o *screenshot.Options) func(any) {
	return func(ev any) {
		switch e := ev.(type) {
		case *fetch.EventRequestPaused:
			go p.decide(rctx, st, o, e)
		case *fetch.EventAuthRequired:
			go st.answerAuth(rctx, e)
		case *runtime.EventBindingCalled:
			if e.Name == hideBinding {
				st.lookup(+1) // before the answer to any later command
				go p.hideLookup(rctx, st, e)
				return
			}
			go p.consentMessage(rctx, st, e)
		case *page.EventJavascriptDialogOpening:
			// Dialogs would stall the page; dismiss them, but let the page
			// leave. The tab may be gone by then.
			accept := e.Type == page.DialogTypeBeforeunload
			go func() {
				_, _ = chromedp.Call(rctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
			}()
		case *inspector.EventTargetCrashed:
			rcancel(errCrashed)
		default:
			st.event(ev)
		}
	}
}

// logBlocked logs the render's blocked requests by category.
func (p *Pool) logBlocked(ctx context.Context, st *tab) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.blocked) > 0 {
		var args []any
		for c, n := range st.blocked {
			args = append(args, c, n)
		}
		p.log.DebugContext(ctx, "blocked requests", args...)
	}
}

// stepFailed explains why a step of the render failed: a refused main-frame
// navigation (which can also take the page away under a later step), a
// crash, or the step's own error.
func (p *Pool) stepFailed(ctx, rctx context.Context, st *tab, name string, err error) error {
	if blocked := st.mainBlocked(); blocked != nil {
		return blocked
	}
	var se *screenshot.Error
	if errors.As(err, &se) {
		return err
	}
	if cause := context.Cause(rctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return fmt.Errorf("%s: %w: %w", name, cause, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// setup returns the actions that prepare the tab before navigation; css is
// the stylesheet every document adopts, and lookups whether documents ask
// for the hiding rules that name their classes and ids.
func (p *Pool) setup(c *conn, o *screenshot.Options, intercept bool, css string, lookups bool) []chromedp.Action[chromedp.Void] {
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
		call(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: mediaType(o), Features: []*emulation.MediaFeature{
			{Name: "prefers-color-scheme", Value: o.ColorScheme},
			{Name: "prefers-reduced-motion", Value: o.ReducedMotion},
		}}),
	}
	if o.TimeZone != "" {
		steps = append(steps, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if _, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: o.TimeZone}); err != nil {
				// The parser knows the IANA names; a browser whose ICU is
				// older may not know a new one.
				return &screenshot.Error{Code: screenshot.EINVALID, Err: err,
					Message: fmt.Sprintf("parameter time_zone: the browser does not know the time zone %q", o.TimeZone)}
			}
			return nil
		}))
	}
	if o.OmitBackground {
		// By hand: the protocol type omits an alpha of 0, which means 1.
		steps = append(steps, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			return t.Call(ctx, emulation.CommandSetDefaultBackgroundColorOverride,
				map[string]any{"color": map[string]any{"r": 0, "g": 0, "b": 0, "a": 0}}, nil)
		}))
	}
	if o.HasTouch {
		steps = append(steps, call(emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: true, MaxTouchPoints: 5}))
	}
	if o.BypassCSP {
		steps = append(steps, call(page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true}))
	}
	if len(o.Cookies) > 0 {
		steps = append(steps, call(network.SetCookies, network.SetCookiesParams{Cookies: cookieParams(o.URL, o.Cookies)}))
	}
	if intercept || p.cfg.Outbound != nil {
		// The per-render proxy asks for its credentials; interception is
		// how the browser answers (only the proxy's challenge, never a
		// site's).
		yes := p.cfg.Outbound != nil
		steps = append(steps, call(fetch.Enable, fetch.EnableParams{HandleAuthRequests: &yes}))
	}
	yes := true
	// Before the page's scripts, in its own world: no WebRTC. A browser
	// we launch also forbids UDP outside a proxy by flag; a remote one may
	// have been started without it.
	steps = append(steps, call(page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: noWebRTCScript, RunImmediately: &yes}))
	return append(steps, hideSetup(css, lookups)...)
}

// noWebRTCScript removes the WebRTC constructors from every document: UDP
// to a STUN or TURN server would not pass through the per-render proxy.
const noWebRTCScript = `(() => {
	for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel", "RTCIceTransport", "RTCSctpTransport"]) {
		try { Object.defineProperty(globalThis, name, {value: undefined, writable: false, configurable: false}); } catch (e) {}
	}
})();`

// mediaType is the emulated CSS media type; "" leaves the browser's own.
func mediaType(o *screenshot.Options) string {
	switch {
	case o.MediaType == "print":
		return "print"
	case o.Format == screenshot.PDF:
		return "screen" // printing uses print unless screen is asked for
	}
	return ""
}

// together is one action that runs independent actions at once: each set-up
// command is a round trip to the browser, and none depends on another. Its
// error is the first in the list's order.
func together(actions ...chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		errs := make([]error, len(actions))
		var wg sync.WaitGroup
		for i, a := range actions {
			wg.Go(func() { _, errs[i] = a(ctx, t) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return chromedp.Void{}, err
			}
		}
		return chromedp.Void{}, nil
	}
}

// call wraps one protocol command whose result is not needed as an action.
func call[P, R any](cmd cdp.Command[P, R], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cmd, params)
		return err
	})
}

// cookieParams are the cookies of a render; one without a Domain is a
// host-only cookie of the target URL (the browser derives the host, IPv6
// literals included).
func cookieParams(target string, cs []*http.Cookie) []*network.CookieParam {
	out := make([]*network.CookieParam, 0, len(cs))
	for _, c := range cs {
		cp := &network.CookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HttpOnly}
		if c.Domain == "" {
			cp.URL = target
		}
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
		params := fetch.ContinueRequestParams{RequestID: e.RequestID}
		if len(o.Headers) > 0 && sameOrigin(o.Target, e.Request.URL) {
			params.Headers = withHeaders(e.Request.Headers, o.Headers)
		}
		_, _ = chromedp.Call(ctx, fetch.ContinueRequest, params) // the tab may be gone
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
	_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
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
// IdleTime, at most IdleMax: it wakes when a request starts or ends, or
// when the quiet time is up, not on a clock of its own.
func (p *Pool) waitIdle(ctx context.Context, st *tab) {
	limit := time.NewTimer(p.cfg.IdleMax)
	defer limit.Stop()
	quiet := time.NewTimer(time.Hour)
	defer quiet.Stop()
	for {
		left, changed := st.untilQuiet(p.cfg.IdleTime)
		if left == 0 {
			return
		}
		var up <-chan time.Time
		if left > 0 {
			quiet.Reset(left)
			up = quiet.C
		}
		select {
		case <-ctx.Done():
			return
		case <-limit.C:
			return
		case <-changed:
		case <-up:
		}
	}
}

// sameOrigin reports whether raw has the scheme, host and port of target.
func sameOrigin(target *url.URL, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || target == nil {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") || strings.EqualFold(u.Scheme, "wss") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(u.Scheme, target.Scheme) && strings.EqualFold(u.Hostname(), target.Hostname()) && port(u) == port(target)
}

// withHeaders is the request's headers with the client's set over them.
func withHeaders(h network.Headers, extra []screenshot.Header) []*fetch.HeaderEntry {
	out := make([]*fetch.HeaderEntry, 0, len(h)+len(extra))
	for name, v := range h {
		if slices.ContainsFunc(extra, func(x screenshot.Header) bool { return strings.EqualFold(x.Name, name) }) {
			continue
		}
		out = append(out, &fetch.HeaderEntry{Name: name, Value: fmt.Sprint(v)})
	}
	for _, x := range extra {
		out = append(out, &fetch.HeaderEntry{Name: x.Name, Value: x.Value})
	}
	return out
}

// answerAuth gives the proxy's challenge the render's credentials; a site's
// own challenge gets the browser's default answer (none, headless).
func (s *tab) answerAuth(ctx context.Context, e *fetch.EventAuthRequired) {
	resp := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseDefault}
	if e.AuthChallenge != nil && e.AuthChallenge.Source == fetch.AuthChallengeSourceProxy && s.proxyUser != "" {
		resp = &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
			Username: s.proxyUser, Password: s.proxyPassword}
	}
	_, _ = chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: e.RequestID, AuthChallengeResponse: resp})
}
