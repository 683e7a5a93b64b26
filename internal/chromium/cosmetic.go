package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Element hiding runs in an isolated world of every document ("shutter"),
// set up through the DevTools protocol, so the page's
// Content-Security-Policy does not apply and its scripts cannot see it.
// It adopts one constructed stylesheet with the rules that always apply
// (site-specific rules, generic ones that name no class or id,
// hide_selectors, styles). The generic rules keyed by a class or id —
// most of a maintained list, ~13 000 for EasyList — are not sent to the
// page: the document sends the classes and ids it has (when it is parsed,
// loaded, and after changes, once a frame) through a binding, and the
// server answers with the rules that name them, which go into a second
// stylesheet.

// hideWorld is the isolated world of element hiding.
const hideWorld = "shutter"

// hideBinding carries a document's classes and ids to the server.
const hideBinding = "__shutterHide"

// stylesheet is the CSS that every document of the render adopts — the
// content filters' hiding rules, hide_selectors and the client's styles —
// and the content filters' rules keyed by class or id, which documents
// ask for.
func (p *Pool) stylesheet(o *screenshot.Options, content []string) (string, map[string][]string) {
	var b strings.Builder
	var lazy map[string][]string
	if len(content) > 0 {
		css, l := p.cfg.Content.CSS(content, o.Host())
		b.WriteString(css)
		lazy = l
	}
	// One rule per selector: an invalid one drops only its own rule.
	for _, sel := range o.HideSelectors {
		b.WriteString("\n" + sel + " { display: none !important; }")
	}
	if o.Styles != "" {
		b.WriteString("\n" + o.Styles)
	}
	return strings.TrimSpace(b.String()), lazy
}

// hideSetup installs element hiding in every document: css, and with
// lookups the binding through which documents ask for the rest.
func hideSetup(css string, lookups bool) []chromedp.Action[chromedp.Void] {
	if css == "" && !lookups {
		return nil
	}
	var steps []chromedp.Action[chromedp.Void]
	if lookups {
		steps = append(steps, call(runtime.AddBinding, runtime.AddBindingParams{Name: hideBinding, ExecutionContextName: hideWorld}))
	}
	src, _ := json.Marshal(css)
	return append(steps, call(page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: fmt.Sprintf(hideScript, src, lookups, hideBinding), WorldName: hideWorld}))
}

// hideScript adopts the stylesheet and a second one that receives the rules
// the server sends (shutterHideRules); with lookups it sends the classes
// and ids it has not sent yet (shutterScan: when the document is parsed,
// loaded, after each change once a frame, and when the server asks; at
// most 20 000 per document, against a page that makes them up). The
// top document says so first, so that the server knows its world. Both
// sheets are adopted again if the page replaces the adopted stylesheets.
const hideScript = `(() => {
	const sheet = new CSSStyleSheet();
	sheet.replaceSync(%[1]s);
	const found = new CSSStyleSheet(), lookups = %[2]t, seen = new Set();
	const adopt = () => {
		const have = document.adoptedStyleSheets;
		if (!have.includes(sheet) || !have.includes(found)) {
			document.adoptedStyleSheets = [...have.filter((s) => s !== sheet && s !== found), sheet, found];
		}
	};
	globalThis.shutterHideRules = (sels) => {
		for (const sel of sels) {
			try { found.insertRule(sel + " { display: none !important; }", found.cssRules.length); } catch (e) {}
		}
		adopt();
	};
	const scan = globalThis.shutterScan = () => {
		if (lookups) {
			const fresh = [];
			const look = (token) => { if (!seen.has(token) && seen.size < 20000) { seen.add(token); fresh.push(token); } };
			for (const el of document.querySelectorAll("[id],[class]")) {
				if (el.id) look("#" + el.id);
				for (const c of el.classList) look("." + c);
			}
			if (fresh.length > 0) %[3]s(JSON.stringify({tokens: fresh}));
		}
		adopt();
	};
	adopt();
	document.addEventListener("DOMContentLoaded", scan);
	addEventListener("load", scan);
	if (lookups) {
		if (window === window.top) %[3]s(JSON.stringify({top: true}));
		let queued = false;
		new MutationObserver(() => {
			if (!queued) {
				queued = true;
				requestAnimationFrame(() => { queued = false; scan(); });
			}
		}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ["id", "class"]});
	}
})();`

// lookup counts a document's question (+1) or its answer (-1).
func (s *tab) lookup(delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups += delta
	s.wake()
}

// hideLookup answers a document's classes and ids with the rules that name
// them, in the world that asked; the top document's first message tells
// which world is its own.
func (p *Pool) hideLookup(ctx context.Context, st *tab, ev *runtime.EventBindingCalled) {
	defer st.lookup(-1)
	var msg struct {
		Top    bool     `json:"top"`
		Tokens []string `json:"tokens"`
	}
	if json.Unmarshal([]byte(ev.Payload), &msg) != nil {
		return
	}
	if msg.Top {
		st.mu.Lock()
		st.hideCtx = ev.ExecutionContextID
		st.mu.Unlock()
	}
	var sels []string
	for _, token := range msg.Tokens {
		sels = append(sels, st.lazy[token]...)
	}
	if len(sels) == 0 {
		return
	}
	js, _ := json.Marshal(sels)
	// The document may be gone by now.
	_, _ = chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: "shutterHideRules(" + string(js) + ")", ContextID: ev.ExecutionContextID})
}

// hideSettle is the last step before the capture when documents ask for
// hiding rules: the top document scans once more, and every question
// asked by then is answered (at most hideSettleMax). A question sent
// before the scan's answer arrives is counted before it.
func (p *Pool) hideSettle(st *tab) func(ctx context.Context, t *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		st.mu.Lock()
		id := st.hideCtx
		st.mu.Unlock()
		if id != 0 {
			_, _ = cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: "shutterScan()", ContextID: id})
		}
		limit := time.NewTimer(hideSettleMax)
		defer limit.Stop()
		for {
			st.mu.Lock()
			open, changed := st.lookups, st.changed
			st.mu.Unlock()
			if open <= 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-limit.C:
				return nil
			case <-changed:
			}
		}
	}
}

// hideSettleMax bounds the wait for the answers to documents' questions.
const hideSettleMax = time.Second
