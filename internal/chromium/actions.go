package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// A render is a list of small named steps that run in order on the page
// once it is set up: navigate, the waits, the interactions, the capture. An
// option adds a step; it never adds a branch to another step.
type step struct {
	name string
	run  func(ctx context.Context, t *chromedp.Target) error
}

// steps are the actions between set-up and capture that o asks for.
func (p *Pool) steps(o *screenshot.Options, st *tab) []step {
	s := []step{{"navigate", p.navigate(o, st)}}
	if o.WaitUntil == "" || o.WaitUntil == "load" {
		s = append(s, step{"network quiet", func(ctx context.Context, _ *chromedp.Target) error {
			p.waitIdle(ctx, st)
			return nil
		}})
	}
	if st.consent != nil {
		s = append(s, step{"consent", p.waitConsent(st)})
	}
	if o.WaitForSelector != "" {
		s = append(s, step{"wait_for_selector", waitForSelector(o.WaitForSelector, p.cfg.Timeout)})
	}
	if o.Click != "" {
		s = append(s, step{"click", p.click(o.Click, st)})
	}
	if o.Scripts != "" {
		s = append(s, step{"scripts", p.runScripts(o.Scripts, st)})
	}
	if len(o.HideSelectors) > 0 {
		s = append(s, step{"hide_selectors", checkSelectors(o.HideSelectors)})
	}
	if full := o.FullPage || o.Format == screenshot.PDF; full && o.FullPageScroll {
		s = append(s, step{"full_page_scroll", p.scrollThrough(o.FullPageScrollDuration, st)})
	}
	if o.Delay > 0 {
		s = append(s, step{"delay", func(ctx context.Context, _ *chromedp.Target) error { return sleep(ctx, o.Delay) }})
	}
	if len(st.lazy) > 0 {
		s = append(s, step{"hide", p.hideSettle(st)})
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// lifecycleNames are Chromium's lifecycle events for wait_until; load is
// waited for by chromedp.Navigate itself.
var lifecycleNames = map[string]string{
	"domcontentloaded": "DOMContentLoaded",
	"networkidle0":     "networkIdle",       // no connection for 500 ms
	"networkidle2":     "networkAlmostIdle", // at most 2 connections for 500 ms
}

// navigate loads the page and waits for the milestone of wait_until, within
// the load timeout.
func (p *Pool) navigate(o *screenshot.Options, st *tab) func(ctx context.Context, t *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		nctx, cancel := context.WithTimeout(ctx, p.cfg.LoadTimeout)
		defer cancel()
		event, ok := lifecycleNames[o.WaitUntil]
		if !ok {
			return wrapLoad(ctx, nctx, p.cfg.LoadTimeout, chromedp.Do(nctx, chromedp.Navigate(o.URL)))
		}
		res, err := cdp.Call(nctx, t, page.Navigate, page.NavigateParams{URL: o.URL})
		if err == nil && res.ErrorText != "" {
			err = &chromedp.LoadError{ErrorText: res.ErrorText}
		}
		if err == nil {
			err = st.waitLifecycle(nctx, res.LoaderID, event)
		}
		return wrapLoad(ctx, nctx, p.cfg.LoadTimeout, err)
	}
}

// wrapLoad names a load that ran past the load timeout (but not past the
// render's own deadline, which classify names).
func wrapLoad(ctx, nctx context.Context, limit time.Duration, err error) error {
	if err != nil && nctx.Err() != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return &screenshot.Error{Code: screenshot.ETIMEOUT, Message: fmt.Sprintf("the page did not finish loading within %s", limit), Err: err}
	}
	return err
}

// captureMargin is the part of the render deadline that waits leave to
// the capture, so that a wait that ends unmet says so instead of a timeout.
const captureMargin = 1500 * time.Millisecond

// waitBudget is how long a wait may take within ctx's deadline.
func waitBudget(ctx context.Context, fallback time.Duration) time.Duration {
	d := fallback
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	return max(d-captureMargin, 100*time.Millisecond)
}

// waitScript resolves with "" once a visible element matches, "timeout"
// when none did within ms, or the message of an invalid selector.
const waitScript = `new Promise((resolve) => {
	const sel = %s, until = Date.now() + %d;
	const visible = (el) => {
		if (!el) return false;
		const r = el.getBoundingClientRect(), s = getComputedStyle(el);
		return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && s.display !== "none";
	};
	const check = () => {
		let el;
		try { el = document.querySelector(sel); } catch (e) { return resolve(String(e.message)); }
		if (visible(el)) return resolve("");
		if (Date.now() > until) return resolve("timeout");
		setTimeout(check, 25);
	};
	check();
})`

func waitForSelector(sel string, fallback time.Duration) func(ctx context.Context, t *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		budget := waitBudget(ctx, fallback)
		js, _ := json.Marshal(sel)
		res, err := chromedp.Evaluate[string](fmt.Sprintf(waitScript, js, budget.Milliseconds()), awaitPromise)(ctx, t)
		switch {
		case err != nil:
			return fmt.Errorf("wait_for_selector: %w", err)
		case res == "timeout":
			return screenshot.Errorf(screenshot.EUNPROCESSABLE, "wait_for_selector %q: no visible element matched within %s",
				sel, budget.Round(100*time.Millisecond))
		case res != "":
			return screenshot.Errorf(screenshot.EINVALID, "parameter wait_for_selector is not a valid CSS selector: %s", res)
		}
		return nil
	}
}

func awaitPromise(p *runtime.EvaluateParams) {
	yes := true
	p.AwaitPromise = &yes
}

// centerScript scrolls the first match into view and returns the centre of
// its box in viewport coordinates.
const centerScript = `(() => {
	let el;
	try { el = document.querySelector(%s); } catch (e) { return {Err: String(e.message)}; }
	if (!el) return {Err: "none"};
	el.scrollIntoView({block: "center", inline: "center"});
	const r = el.getBoundingClientRect();
	if (r.width < 1 || r.height < 1) return {Err: "empty"};
	return {X: r.left + r.width / 2, Y: r.top + r.height / 2};
})()`

// click presses and releases the left mouse button on the first match, as a
// person would, then waits for the network to be quiet.
func (p *Pool) click(sel string, st *tab) func(ctx context.Context, t *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		js, _ := json.Marshal(sel)
		at, err := chromedp.Evaluate[box](fmt.Sprintf(centerScript, js))(ctx, t)
		switch {
		case err != nil:
			return fmt.Errorf("click: %w", err)
		case at.Err == "none":
			return screenshot.Errorf(screenshot.EUNPROCESSABLE, "click %q matched no element on the page", sel)
		case at.Err == "empty":
			return screenshot.Errorf(screenshot.EUNPROCESSABLE, "click %q matched an element with no visible size", sel)
		case at.Err != "":
			return screenshot.Errorf(screenshot.EINVALID, "parameter click is not a valid CSS selector: %s", at.Err)
		}
		for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
			if _, err := cdp.Call(ctx, t, input.DispatchMouseEvent, input.DispatchMouseEventParams{
				Type: typ, X: at.X, Y: at.Y, Button: input.MouseButtonLeft, ClickCount: 1}); err != nil {
				return fmt.Errorf("click: %w", err)
			}
		}
		p.waitIdle(ctx, st)
		return nil
	}
}

// runScripts evaluates the client's script in the page's own world and
// awaits the promise it returns.
func (p *Pool) runScripts(src string, st *tab) func(ctx context.Context, t *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[*runtime.RemoteObject](src, awaitPromise)(ctx, t)
		var ee *chromedp.ExceptionError
		if errors.As(err, &ee) {
			return screenshot.Errorf(screenshot.EUNPROCESSABLE, "parameter scripts threw: %s", exceptionText(ee.ExceptionDetails))
		}
		if err != nil {
			return fmt.Errorf("scripts: %w", err)
		}
		p.waitIdle(ctx, st)
		return nil
	}
}

func exceptionText(d *runtime.ExceptionDetails) string {
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
	}
	msg, _, _ = strings.Cut(msg, "\n") // the first line, without the stack
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// selectorsScript returns the first selector that does not parse, with the
// browser's message.
const selectorsScript = `((sels) => {
	for (const s of sels) {
		try { document.querySelector(s); } catch (e) { return s + ": " + e.message; }
	}
	return "";
})(%s)`

// checkSelectors refuses hide_selectors that the browser cannot parse: the
// stylesheet would drop such a rule without a word.
func checkSelectors(sels []string) func(ctx context.Context, t *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		js, _ := json.Marshal(sels)
		bad, err := chromedp.Evaluate[string](fmt.Sprintf(selectorsScript, js))(ctx, t)
		if err != nil {
			return fmt.Errorf("hide_selectors: %w", err)
		}
		if bad != "" {
			return screenshot.Errorf(screenshot.EINVALID, "parameter hide_selectors: not a valid CSS selector: %s", bad)
		}
		return nil
	}
}

// scrollScript scrolls down one viewport at a time over the duration, so
// that lazy content enters the viewport, waits a frame at each stop, and
// returns to the top.
const scrollScript = `(async (duration) => {
	const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
	const wait = (ms) => new Promise((r) => setTimeout(r, ms));
	const vh = Math.max(innerHeight, 1);
	const steps = Math.min(Math.ceil(document.documentElement.scrollHeight / vh), 200);
	for (let i = 1; i < steps; i++) {
		scrollTo(0, i * vh);
		await frame();
		await wait(duration / steps);
	}
	scrollTo(0, 0);
	await frame();
})(%d)`

// scrollThrough runs full_page_scroll, then waits for what it started to load.
func (p *Pool) scrollThrough(d time.Duration, st *tab) func(ctx context.Context, t *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		if _, err := chromedp.Evaluate[*runtime.RemoteObject](fmt.Sprintf(scrollScript, d.Milliseconds()), awaitPromise)(ctx, t); err != nil {
			return fmt.Errorf("full_page_scroll: %w", err)
		}
		p.waitIdle(ctx, st)
		return nil
	}
}

// shot is the output of a capture.
type shot struct {
	data      []byte
	truncated bool
}

// output is the last action of a render: the image or the PDF.
func output(o *screenshot.Options) chromedp.Action[shot] {
	if o.Format == screenshot.PDF {
		return printPDF(o)
	}
	return capture(o)
}

// printPDF prints the page with the paper of pdf_paper_format.
func printPDF(o *screenshot.Options) chromedp.Action[shot] {
	return func(ctx context.Context, t *chromedp.Target) (shot, error) {
		size := screenshot.PaperFormats[o.PDFPaperFormat]
		if size == [2]float64{} {
			size = screenshot.PaperFormats["a4"]
		}
		res, err := cdp.Call(ctx, t, page.PrintToPDF, page.PrintToPDFParams{
			Landscape: &o.PDFLandscape, PrintBackground: &o.PDFPrintBackground,
			PaperWidth: size[0], PaperHeight: size[1],
		})
		if err != nil {
			return shot{}, fmt.Errorf("print to PDF: %w", err)
		}
		return shot{data: res.Data}, nil
	}
}

// maxSide is the largest image side of the format in device pixels (WebP
// stores sides in 14 bits).
func maxSide(f screenshot.Format) float64 {
	if f == screenshot.WebP {
		return 16383
	}
	return screenshot.MaxCaptureSide
}

// region is what a capture covers, in CSS pixels of the document.
type region struct {
	x, y, w, h float64
	beyond     bool // outside the viewport: capture beyond it
	truncated  bool
}

// capture takes the screenshot of the region that o describes: the
// viewport, the clip, the whole page or the selector's element, scaled to
// image_width/image_height by the browser's own capture scaling.
func capture(o *screenshot.Options) chromedp.Action[shot] {
	return func(ctx context.Context, t *chromedp.Target) (shot, error) {
		r, err := captureRegion(ctx, t, o)
		if err != nil {
			return shot{}, err
		}
		params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormat(o.Format)}
		if o.Format != screenshot.PNG {
			q := int64(o.Quality)
			params.Quality = &q
		}
		if r != nil {
			scale := thumbnail(o, r)
			params.Clip = &page.Viewport{X: r.x, Y: r.y, Width: r.w, Height: r.h, Scale: scale}
			if r.beyond {
				params.CaptureBeyondViewport = &r.beyond
			}
		}
		res, err := cdp.Call(ctx, t, page.CaptureScreenshot, params)
		if err != nil {
			return shot{}, fmt.Errorf("capture: %w", err)
		}
		return shot{data: res.Data, truncated: r != nil && r.truncated}, nil
	}
}

// captureRegion finds the region to capture; nil is the viewport as it is.
func captureRegion(ctx context.Context, t *chromedp.Target, o *screenshot.Options) (*region, error) {
	dsf := max(o.DeviceScaleFactor, 1)
	switch {
	case o.Selector != "":
		return elementRegion(ctx, t, o)
	case o.Clip != nil:
		c := o.Clip
		return &region{x: float64(c.X), y: float64(c.Y), w: float64(c.Width), h: float64(c.Height), beyond: true}, nil
	case o.FullPage:
		m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return nil, fmt.Errorf("page size: %w", err)
		}
		h := math.Ceil(m.CSSContentSize.Height)
		limit := math.Min(float64(o.FullPageMaxHeight), math.Floor(maxSide(o.Format)/dsf))
		if o.FullPageMaxHeight == 0 {
			limit = math.Floor(maxSide(o.Format) / dsf)
		}
		r := &region{w: float64(o.Width), h: max(h, float64(o.Height)), beyond: true}
		if r.h > limit {
			r.h, r.truncated = limit, true
		}
		return r, nil
	case o.ImageWidth > 0 || o.ImageHeight > 0:
		// The viewport as it is scrolled, as a clip so that it can be scaled.
		m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return nil, fmt.Errorf("page size: %w", err)
		}
		return &region{x: m.CSSVisualViewport.PageX, y: m.CSSVisualViewport.PageY, w: float64(o.Width), h: float64(o.Height)}, nil
	}
	return nil, nil
}

// thumbnail returns the capture scale for image_width/image_height (1
// without them), cropping r from the right or the bottom when both are
// given with another aspect ratio than r's.
func thumbnail(o *screenshot.Options, r *region) float64 {
	dsf := o.DeviceScaleFactor
	tw, th := float64(o.ImageWidth), float64(o.ImageHeight)
	switch {
	case tw > 0 && th > 0:
		if r.w/r.h > tw/th {
			r.w = r.h * tw / th
		} else {
			r.h = r.w * th / tw
		}
		return tw / (r.w * dsf)
	case tw > 0:
		return tw / (r.w * dsf)
	case th > 0:
		return th / (r.h * dsf)
	}
	return 1
}

// box is an element's border box in CSS pixels of the document, or a
// point; Err says why there is none.
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

// elementRegion is the border box of the selector's first match.
func elementRegion(ctx context.Context, t *chromedp.Target, o *screenshot.Options) (*region, error) {
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
	if dsf := max(o.DeviceScaleFactor, 1); w*dsf > maxSide(o.Format) || h*dsf > maxSide(o.Format) {
		return nil, screenshot.Errorf(screenshot.EUNPROCESSABLE,
			"selector %q matched an element of %.0f×%.0f CSS pixels; an image may be at most %d device pixels on a side",
			o.Selector, w, h, screenshot.MaxCaptureSide)
	}
	return &region{x: x, y: y, w: w, h: h, beyond: true}, nil
}
