// Package blocking is the content filter behind block_ads, block_trackers
// and block_cookie_banners: AdGuard's urlfilter engine over filter lists in
// the Adblock Plus / AdGuard syntax. Network rules decide which requests a
// page may make; cosmetic rules become a stylesheet that hides ad slots and
// consent dialogs. The engine is compiled once and swapped whole when the
// lists are refreshed.
package blocking

import (
	"context"
	"embed"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/AdguardTeam/urlfilter"
	"github.com/AdguardTeam/urlfilter/filterlist"
	"github.com/AdguardTeam/urlfilter/rules"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Category is one of the three switches, named as the screenshot options
// name them (a plain string).
type Category = string

const (
	Ads      Category = "ads"
	Trackers Category = "trackers"
	Cookies  Category = "cookies"
)

// Categories in a fixed order.
var Categories = []Category{Ads, Trackers, Cookies}

//go:embed lists/*.txt lists/unlock.css
var builtin embed.FS

// Config names the lists of each category: files or http(s) URLs, loaded in
// addition to the built-in list of the category.
type Config struct {
	Lists   map[Category][]string
	Refresh time.Duration // how often URL lists are fetched again; 0: never
	Client  *http.Client
}

// Filter matches requests and builds stylesheets.
type Filter struct {
	cfg     Config
	log     *slog.Logger
	engines atomic.Pointer[map[Category]*urlfilter.Engine]

	mu         sync.Mutex
	stats      map[Category]ListStats
	loggedOnce map[Category]bool
}

// New loads the lists and compiles the engines. A configured list that
// cannot be read is logged and skipped: the built-in rules always apply.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Filter, error) {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	f := &Filter{cfg: cfg, log: log, loggedOnce: map[Category]bool{}}
	if err := f.Reload(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// Reload reads every list again and swaps the engines in one step.
func (f *Filter) Reload(ctx context.Context) error {
	engines := map[Category]*urlfilter.Engine{}
	stats := map[Category]ListStats{}
	for i, c := range Categories {
		text, err := builtin.ReadFile("lists/" + string(c) + ".txt")
		if err != nil {
			return err
		}
		sources := []string{string(text)}
		for _, src := range f.cfg.Lists[c] {
			body, err := f.fetch(ctx, src)
			if err != nil {
				f.log.WarnContext(ctx, "filter list not loaded; using the others", "category", c, "source", src, "err", err)
				continue
			}
			sources = append(sources, body)
		}
		lists := make([]filterlist.RuleList, 0, len(sources))
		var st ListStats
		for j, s := range sources {
			id := i*1000 + j + 1
			text, ls := clean(s, id)
			st.add(ls)
			lists = append(lists, &filterlist.StringRuleList{ID: id, RulesText: text})
		}
		stats[c] = st
		if !f.loggedOnce[c] {
			f.log.InfoContext(ctx, "filter lists loaded", append([]any{"category", c, "sources", len(sources)}, st.logArgs()...)...)
		}
		storage, err := filterlist.NewRuleStorage(lists)
		if err != nil {
			return fmt.Errorf("filter lists %s: %w", c, err)
		}
		engines[c] = urlfilter.NewEngine(storage)
	}
	f.engines.Store(&engines)
	f.mu.Lock()
	f.stats = stats
	for _, c := range Categories {
		f.loggedOnce[c] = true
	}
	f.mu.Unlock()
	return nil
}

// Stats are the counts of the lists as last loaded.
func (f *Filter) Stats() map[Category]ListStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *Filter) fetch(ctx context.Context, src string) (string, error) {
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		b, err := os.ReadFile(src)
		return string(b), err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return "", err
	}
	resp, err := f.cfg.Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return string(b), err
}

// Run refreshes the lists every Refresh until ctx ends.
func (f *Filter) Run(ctx context.Context) {
	if f.cfg.Refresh <= 0 {
		return
	}
	t := time.NewTicker(f.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := f.Reload(ctx); err != nil && ctx.Err() == nil {
				f.log.WarnContext(ctx, "filter list refresh failed; keeping the current rules", "err", err)
			}
		}
	}
}

// requestTypes maps the DevTools protocol's resource types.
var requestTypes = map[string]rules.RequestType{
	"document": rules.TypeDocument, "stylesheet": rules.TypeStylesheet, "image": rules.TypeImage,
	"media": rules.TypeMedia, "font": rules.TypeFont, "script": rules.TypeScript, "xhr": rules.TypeXmlhttprequest,
	"fetch": rules.TypeXmlhttprequest, "websocket": rules.TypeWebsocket, "ping": rules.TypePing,
	"cspviolationreport": rules.TypePing, "eventsource": rules.TypeOther, "manifest": rules.TypeOther,
}

var _ screenshot.ContentFilter = (*Filter)(nil)

// Block says whether one of the enabled categories blocks a request of the
// page at pageURL, and which. subframe marks the document of an iframe; the
// page's own document is never blocked.
func (f *Filter) Block(enabled []Category, requestURL, pageURL, resourceType string, subframe bool) (Category, bool) {
	engines := *f.engines.Load()
	rt, ok := requestTypes[strings.ToLower(resourceType)]
	if !ok {
		rt = rules.TypeOther
	}
	if rt == rules.TypeDocument {
		if !subframe {
			return "", false // the page itself is never filtered
		}
		rt = rules.TypeSubdocument
	}
	req := rules.NewRequest(requestURL, pageURL, rt)
	for _, c := range enabled {
		res := engines[c].MatchRequest(req)
		if r := res.GetBasicResult(); r != nil && !r.Whitelist {
			return c, true
		}
	}
	return "", false
}

// Stylesheet returns the whole CSS of the enabled categories' cosmetic
// rules for a page on host, the lazy part included.
func (f *Filter) Stylesheet(enabled []Category, host string) string {
	css, lazy := f.CSS(enabled, host)
	var b strings.Builder
	b.WriteString(css)
	for _, sels := range lazy {
		for _, sel := range sels {
			fmt.Fprintf(&b, "%s { display: none !important; }\n", sel)
		}
	}
	return b.String()
}

// CSS returns the enabled categories' cosmetic rules for a page on
// host in two parts. css is applied as it is: site-specific element hiding
// (one rule per selector, so that one selector the browser does not know
// cannot void the others), CSS rules, and generic selectors that need no
// particular class or id. lazy holds the other generic element-hiding
// selectors — maintained lists have thousands — by the class (".x") or id
// ("#x") that an element must carry for them to match; the page applies
// only those whose class or id it has (a stylesheet of every generic rule
// costs each render far more than the few that can match).
func (f *Filter) CSS(enabled []Category, host string) (css string, lazy map[string][]string) {
	engines := *f.engines.Load()
	var b strings.Builder
	lazy = map[string][]string{}
	hide := func(sel string) { fmt.Fprintf(&b, "%s { display: none !important; }\n", sel) }
	for _, c := range enabled {
		res := engines[c].GetCosmeticResult(host, rules.CosmeticOptionAll)
		for _, sel := range res.ElementHiding.Generic {
			if key := selectorKey(sel); key != "" {
				lazy[key] = append(lazy[key], sel)
			} else {
				hide(sel)
			}
		}
		for _, sel := range res.ElementHiding.Specific {
			hide(sel)
		}
		for _, group := range [][]string{res.CSS.Generic, res.CSS.Specific} {
			for _, css := range group {
				b.WriteString(css)
				b.WriteByte('\n')
			}
		}
		if c == Cookies {
			unlock, _ := builtin.ReadFile("lists/unlock.css")
			b.Write(unlock)
		}
	}
	return b.String(), lazy
}

// selectorKey is a class (".x") or id ("#x") that every element the
// selector matches must carry, or "" when there is none to be sure of (a
// selector list, an escape, only tags and attributes).
func selectorKey(sel string) string {
	depth := 0
	for i := 0; i < len(sel); i++ {
		switch c := sel[i]; {
		case c == '\\' || c == ',' || c == '"' || c == '\'':
			return ""
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case depth == 0 && (c == '.' || c == '#'):
			j := i + 1
			for j < len(sel) && (sel[j] == '-' || sel[j] == '_' || sel[j] >= '0' && sel[j] <= '9' ||
				sel[j] >= 'a' && sel[j] <= 'z' || sel[j] >= 'A' && sel[j] <= 'Z' || sel[j] >= 0x80) {
				j++
			}
			if j > i+1 {
				return sel[i:j]
			}
			return ""
		}
	}
	return ""
}
