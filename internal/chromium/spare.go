package chromium

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// A spare is a browser context with its tab (and, with the outbound policy,
// its own proxy session) opened ahead of the render that will use it, while
// the previous render runs: opening one is the largest part of a render's
// time, and none of it depends on the request. A spare serves exactly one
// render and is disposed with it, as a context opened on demand is; each
// browser keeps at most one.
type spare struct {
	tctx          context.Context // the chromedp context of the tab
	tcancel       context.CancelFunc
	closeProxy    func()
	user, pass    string
	mainFrame     cdp.FrameID
	contextID     cdp.BrowserContextID
	refuse        atomic.Pointer[func(host string, err error)] // the render's, once it claims the spare
	disposeOnLost func() bool                                  // stops the disposal on the browser's end
}

// spares are a browser connection's spare and whether one is being made.
type spares struct {
	mu      sync.Mutex
	ready   *spare
	making  chan struct{} // closed when the spare being made is ready (or failed); nil when none is
	stopped bool
	// early is whether the next spare is opened while the render before
	// it still runs (from its navigation on) rather than after it: renders
	// come back to back, so that one opened after the last render would
	// not have been ready for this one. With gaps between them, a spare
	// opened after the render is ready in time and does not take the
	// cores from the render's capture.
	early bool
	// lastEnd is when the last render ended, opening how long the last
	// spare took to open.
	lastEnd time.Time
	opening time.Duration
}

// take returns the spare of c: the ready one, or the one being made once
// it is (never longer than ctx); nil when there is none.
func (s *spares) take(ctx context.Context) *spare {
	s.mu.Lock()
	sp, making := s.ready, s.making
	s.ready = nil
	switch {
	case making != nil:
		s.early = true
	case sp != nil && !s.lastEnd.IsZero():
		s.early = time.Since(s.lastEnd) < s.opening
	}
	s.mu.Unlock()
	if sp != nil || making == nil {
		return sp
	}
	select {
	case <-making:
	case <-ctx.Done():
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sp = s.ready
	s.ready = nil
	return sp
}

// ended notes that a render ended.
func (s *spares) ended() {
	s.mu.Lock()
	s.lastEnd = time.Now()
	s.mu.Unlock()
}

// opensEarly reports whether the next spare should be opened while the
// current render runs.
func (s *spares) opensEarly() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.early
}

// settled waits until no spare is being made, for tests and benchmarks.
func (s *spares) settled() {
	s.mu.Lock()
	making := s.making
	s.mu.Unlock()
	if making != nil {
		<-making
	}
}

// spareContext is the browser context of the ready spare, for tests.
func (s *spares) spareContext() cdp.BrowserContextID {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready == nil {
		return ""
	}
	return s.ready.contextID
}

// prepare makes the next spare of c in the background, unless one is ready
// or being made.
func (p *Pool) prepare(c *conn) {
	s := &c.spares
	s.mu.Lock()
	if s.ready != nil || s.making != nil || s.stopped || c.gone() {
		s.mu.Unlock()
		return
	}
	made := make(chan struct{})
	s.making = made
	s.mu.Unlock()
	go func() {
		defer close(made)
		start := time.Now()
		sp, err := p.newSpare(c)
		if err == nil {
			if err = sp.open(sp.tctx); err != nil {
				sp.dispose()
			}
		}
		s.mu.Lock()
		s.making = nil
		if err == nil {
			s.opening = time.Since(start)
		}
		keep := err == nil && !s.stopped && !c.gone()
		if keep {
			s.ready = sp
		}
		s.mu.Unlock()
		if err == nil && !keep {
			sp.dispose()
		}
	}()
}

// newSpare prepares a browser context (through a proxy session of its own
// under the outbound policy); open creates it with its tab.
func (p *Pool) newSpare(c *conn) (*spare, error) {
	sp := &spare{closeProxy: func() {}}
	var contextOpts []chromedp.CreateBrowserContextOption
	if p.cfg.Outbound != nil {
		ps, err := p.cfg.Outbound.Open(func(host string, err error) {
			if f := sp.refuse.Load(); f != nil {
				(*f)(host, err)
			}
		})
		if err != nil {
			return nil, err
		}
		sp.closeProxy, sp.user, sp.pass = ps.Close, ps.User, ps.Password
		contextOpts = append(contextOpts, func(params *target.CreateBrowserContextParams) {
			params.ProxyServer = ps.URL
			params.ProxyBypassList = "<-loopback>" // loopback goes through the proxy too
		})
	}
	sp.tctx, sp.tcancel = chromedp.NewContext(c.ctx, chromedp.WithNewBrowserContext(contextOpts...))
	// The browser's end ends the spare: its proxy session closes with it.
	sp.disposeOnLost = context.AfterFunc(c.ctx, sp.closeProxy)
	return sp, nil
}

// open creates the browser context and its tab, and refuses downloads in
// it. ctx is the spare's context or one that lives as long as the tab (its
// end closes the tab).
func (sp *spare) open(ctx context.Context) error {
	if err := chromedp.Do(ctx); err != nil {
		return fmt.Errorf("open tab: %w", err)
	}
	cc := chromedp.FromContext(ctx)
	sp.mainFrame, sp.contextID = cdp.FrameID(cc.Target.TargetID), cc.BrowserContextID
	// Downloads are refused: nothing a page offers is written to disk.
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: cc.BrowserContextID}); err != nil {
		return fmt.Errorf("deny downloads: %w", err)
	}
	return nil
}

// dispose closes the tab, its browser context and the proxy session.
func (sp *spare) dispose() {
	sp.disposeOnLost()
	sp.tcancel()
	sp.closeProxy()
}

// stop disposes of c's spare and makes no more: the browser is going.
func (s *spares) stop() {
	s.mu.Lock()
	s.stopped = true
	sp := s.ready
	s.ready = nil
	s.mu.Unlock()
	if sp != nil {
		sp.dispose()
	}
}
