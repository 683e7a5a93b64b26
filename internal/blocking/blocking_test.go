package blocking

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newFilter(t testing.TB, cfg Config) *Filter {
	t.Helper()
	f, err := New(context.Background(), cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestBuiltinNetworkRules(t *testing.T) {
	f := newFilter(t, Config{})
	page := "https://news.example/article"
	all := Categories
	for _, tc := range []struct {
		url, typ string
		want     Category
	}{
		{"https://securepubads.g.doubleclick.net/tag/js/gpt.js", "Script", Ads},
		{"https://pagead2.googlesyndication.com/pagead/js/adsbygoogle.js?client=ca-pub-1", "Script", Ads},
		{"https://www.googletagmanager.com/gtm.js?id=GTM-XXXX", "Script", Trackers},
		{"https://www.google-analytics.com/g/collect?v=2", "Ping", Trackers},
		{"https://connect.facebook.net/en_US/fbevents.js", "Script", Trackers},
		{"https://cdn.cookielaw.org/scripttemplates/otSDKStub.js", "Script", Cookies},
		{"https://consent.cookiebot.com/uc.js", "Script", Cookies},
		{"https://tpc.googlesyndication.com/safeframe/1-0-40/html/container.html", "Document", Ads}, // a subframe
		{"https://news.example/app.js", "Script", ""},
		{"https://cdn.example/jquery.js", "Script", ""},
	} {
		got, blocked := f.Block(all, tc.url, page, tc.typ, true)
		if got != tc.want || blocked != (tc.want != "") {
			t.Errorf("%s: %q %v, want %q", tc.url, got, blocked, tc.want)
		}
	}
	// Only the enabled categories count; the page itself is never filtered;
	// first-party requests of an ad network's own site are not third-party.
	if _, b := f.Block([]Category{Cookies}, "https://securepubads.g.doubleclick.net/gpt.js", page, "Script", false); b {
		t.Error("ads blocked with only cookies enabled")
	}
	if _, b := f.Block(all, "https://www.doubleclick.net/", "", "Document", false); b {
		t.Error("the main document was blocked")
	}
	if _, b := f.Block(all, "https://www.taboola.com/logo.png", "https://www.taboola.com/", "Image", false); b {
		t.Error("a first-party request was blocked as third-party")
	}
}

func TestStylesheet(t *testing.T) {
	f := newFilter(t, Config{})
	css := f.Stylesheet([]Category{Ads, Cookies}, "news.example")
	for _, want := range []string{"ins.adsbygoogle { display: none !important; }", `[id^="div-gpt-ad"] {`,
		"#onetrust-consent-sdk {", "#CybotCookiebotDialog {", ".qc-cmp2-container {", "overflow: auto !important"} {
		if !strings.Contains(css, want) {
			t.Errorf("stylesheet lacks %q:\n%s", want, css)
		}
	}
	if css := f.Stylesheet([]Category{Trackers}, "news.example"); strings.Contains(css, "adsbygoogle") {
		t.Error("ad hiding without block_ads")
	}
}

func TestConfiguredListsAndRefresh(t *testing.T) {
	var body atomic.Value
	body.Store("||first.example^\n##.first-slot\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body.Load().(string))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "local.txt")
	os.WriteFile(file, []byte("||local.example^$third-party\n@@||doubleclick.net/allowed^\n"), 0o600)
	f := newFilter(t, Config{Lists: map[Category][]string{Ads: {srv.URL + "/list.txt", file, srv.URL + "/404", "/no/such/file"}}})
	page := "https://news.example/"
	for u, want := range map[string]bool{
		"https://first.example/x.js": true, "https://local.example/x.js": true,
		"https://doubleclick.net/allowed/x.js": false, "https://doubleclick.net/other.js": true, "https://second.example/x.js": false,
	} {
		if _, got := f.Block([]Category{Ads}, u, page, "Script", false); got != want {
			t.Errorf("%s: %v, want %v", u, got, want)
		}
	}
	if !strings.Contains(f.Stylesheet([]Category{Ads}, "news.example"), ".first-slot") {
		t.Error("cosmetic rule of a URL list missing")
	}
	body.Store("||second.example^\n")
	if err := f.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, got := f.Block([]Category{Ads}, "https://second.example/x.js", page, "Script", false); !got {
		t.Error("refreshed list not applied")
	}
	if _, got := f.Block([]Category{Ads}, "https://first.example/x.js", page, "Script", false); got {
		t.Error("old rule still applied after refresh")
	}
}

func BenchmarkMatch(b *testing.B) {
	// The built-in lists plus 20 000 generated domain rules, the order of
	// EasyList's network rules.
	var big strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&big, "||ads%d.example^$third-party\n", i)
	}
	file := filepath.Join(b.TempDir(), "big.txt")
	os.WriteFile(file, []byte(big.String()), 0o600)
	f := newFilter(b, Config{Lists: map[Category][]string{Ads: {file}}})
	urls := []string{"https://cdn.news.example/app.js", "https://ads12345.example/x.js", "https://www.googletagmanager.com/gtm.js"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f.Block(Categories, urls[i%len(urls)], "https://news.example/", "Script", false)
		i++
	}
}
