package chromium

import (
	"context"
	"image/color"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/blocking"
	"github.com/shutterhq/shutter/internal/testenv"
)

// newsPage imitates a news site: ad slots with the markup of Google's ad
// products, tracker and consent-manager scripts from their real host names
// (mapped to the test server by the browser's resolver rules), and a
// OneTrust dialog whose backdrop covers the page, with a scroll lock.
const newsPage = `<!doctype html><html><head>
<link rel="stylesheet" href="/page.css">
<script src="https://securepubads.g.doubleclick.net:TLSPORT/tag/js/gpt.js"></script>
<script src="https://pagead2.googlesyndication.com:TLSPORT/pagead/js/adsbygoogle.js"></script>
<script src="https://www.googletagmanager.com:TLSPORT/gtm.js?id=GTM-TEST"></script>
<script src="https://cdn.cookielaw.org:TLSPORT/scripttemplates/otSDKStub.js"></script>
</head><body class="didomi-popup-open">
<img width="1" height="1" alt="" src="https://www.google-analytics.com:TLSPORT/collect?v=1&t=pageview">
<div id="div-gpt-ad-1700000000000-0"></div>
<ins class="adsbygoogle"></ins>
<div id="onetrust-consent-sdk"><div class="onetrust-pc-dark-filter"></div></div>
<div id="CybotCookiebotDialog"></div>
<div id="didomi-host"></div>
<div class="qc-cmp2-container"></div>
<div id="marker"></div>
</body></html>`

const newsCSS = `
html, body { margin: 0; overflow: hidden; background: #ffffff; }
#div-gpt-ad-1700000000000-0 { position: absolute; left: 0; top: 0; width: 300px; height: 250px; background: #ff0000; }
ins.adsbygoogle { display: block; position: absolute; left: 400px; top: 0; width: 300px; height: 250px; background: #ff0000; }
.onetrust-pc-dark-filter { position: fixed; left: 0; top: 0; right: 0; bottom: 0; background: #0000ff; z-index: 1000; }
#CybotCookiebotDialog { position: fixed; left: 0; bottom: 0; width: 100%; height: 100px; background: #008000; z-index: 2000; }
#didomi-host { position: fixed; right: 0; top: 0; width: 80px; height: 600px; background: #ff00ff; z-index: 3000; }
.qc-cmp2-container { position: fixed; left: 0; top: 300px; width: 100%; height: 50px; background: #00ffff; z-index: 3000; }
body.didomi-popup-open { position: fixed; top: -100px; left: 0; right: 0; height: 2000px; }
#marker { position: absolute; left: 0; top: 400px; width: 50px; height: 50px; background: #000000; }
`

func TestContentBlocking(t *testing.T) {
	filter, err := blocking.New(context.Background(), blocking.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	hosts := map[string]int{}
	var port, tlsPort string
	csp := false
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		mu.Lock()
		hosts[host]++
		strict := csp
		mu.Unlock()
		switch r.URL.Path {
		case "/":
			if strict {
				w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self' http:; img-src 'self' http:")
			}
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, strings.ReplaceAll(newsPage, "TLSPORT", tlsPort))
		case "/page.css":
			w.Header().Set("Content-Type", "text/css")
			io.WriteString(w, newsCSS)
		default:
			w.Header().Set("Content-Type", "application/javascript")
		}
	})
	// Third parties are served over TLS: some of their names are on the
	// browser's HSTS preload list, so plain http would be upgraded.
	srv, tlsSrv := httptest.NewServer(handler), httptest.NewTLSServer(handler)
	defer srv.Close()
	defer tlsSrv.Close()
	port = srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	tlsPort = tlsSrv.URL[strings.LastIndex(tlsSrv.URL, ":")+1:]
	var blockedCats []string
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second, Content: filter,
		Flags:     []string{"host-resolver-rules=MAP * 127.0.0.1", "ignore-certificate-errors"},
		OnBlocked: func(c string) { mu.Lock(); blockedCats = append(blockedCats, c); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	page := "http://news.test:" + port + "/"
	third := []string{"securepubads.g.doubleclick.net", "pagead2.googlesyndication.com", "www.googletagmanager.com", "cdn.cookielaw.org", "www.google-analytics.com"}
	reset := func() {
		mu.Lock()
		defer mu.Unlock()
		hosts, blockedCats = map[string]int{}, nil
	}
	white, red, blue := color.RGBA{255, 255, 255, 255}, color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}

	for _, strict := range []bool{false, true} {
		mu.Lock()
		csp = strict
		mu.Unlock()
		name := map[bool]string{false: "", true: " (strict CSP)"}[strict]

		// Off: everything loads and the consent backdrop covers the page.
		reset()
		img := render(t, p, opts(t, page, "format", "png", "width", "800", "height", "600"))
		if c := img.At(10, 10); !near(c, blue, 0) {
			t.Errorf("off%s: pixel %v, want the consent backdrop", name, c)
		}
		mu.Lock()
		for _, h := range third {
			if hosts[h] == 0 {
				t.Errorf("off%s: %s was not requested", name, h)
			}
		}
		mu.Unlock()

		// Cookie banners only: the dialogs go, the ads stay.
		reset()
		img = render(t, p, opts(t, page, "format", "png", "width", "800", "height", "600", "block_cookie_banners", "true"))
		if c := img.At(10, 10); !near(c, red, 0) {
			t.Errorf("cookies%s: pixel (10,10) %v, want the ad slot", name, c)
		}
		for _, pt := range [][2]int{{350, 580}, {790, 100}, {350, 320}} {
			if c := img.At(pt[0], pt[1]); !near(c, white, 0) {
				t.Errorf("cookies%s: pixel %v = %v, want the page (no Cookiebot, Didomi or Quantcast dialog)", name, pt, c)
			}
		}
		// Didomi's body lock (position: fixed, shifted up) is undone.
		if c := img.At(25, 425); !near(c, color.RGBA{0, 0, 0, 255}, 0) {
			t.Errorf("cookies%s: marker not at its place: pixel (25,425) = %v", name, c)
		}

		// Everything on: a clean page, and nothing blocked reached the server.
		reset()
		img = render(t, p, opts(t, page, "format", "png", "width", "800", "height", "600",
			"block_ads", "true", "block_trackers", "true", "block_cookie_banners", "true"))
		for _, pt := range [][2]int{{10, 10}, {450, 100}, {350, 580}} {
			if c := img.At(pt[0], pt[1]); !near(c, white, 0) {
				t.Errorf("all%s: pixel %v = %v, want the bare page", name, pt, c)
			}
		}
		mu.Lock()
		for _, h := range third {
			if hosts[h] != 0 {
				t.Errorf("all%s: blocked host %s received %d requests", name, h, hosts[h])
			}
		}
		counts := map[string]int{}
		for _, c := range blockedCats {
			counts[c]++
		}
		if counts["ads"] != 2 || counts["trackers"] != 2 || counts["cookies"] != 1 {
			t.Errorf("all%s: blocked by category %v", name, counts)
		}
		mu.Unlock()
	}
}
