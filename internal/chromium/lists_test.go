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

// TestMaintainedLists runs block_ads and block_trackers on EasyList and
// EasyPrivacy as Debian ships them. The browser's resolver sends the real
// ad and tracker hosts to the test server, which counts what it receives.
func TestMaintainedLists(t *testing.T) {
	dir := testenv.EasyList(t)
	filter, err := blocking.New(context.Background(), blocking.Config{Lists: map[blocking.Category][]string{
		blocking.Ads: {dir + "/easylist.txt"}, blocking.Trackers: {dir + "/easyprivacy.txt"}}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	st := filter.Stats()
	if st[blocking.Ads].Rules < 20000 || st[blocking.Trackers].Rules < 20000 || st[blocking.Ads].SkippedTotal() == 0 {
		t.Errorf("lists loaded: %+v", st)
	}
	var mu sync.Mutex
	hosts := map[string]int{}
	var tlsPort string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		mu.Lock()
		hosts[host]++
		mu.Unlock()
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, strings.ReplaceAll(`<!doctype html><html><head>
<script async src="https://pagead2.googlesyndication.com:TLSPORT/pagead/js/adsbygoogle.js"></script>
<script async src="https://www.googletagmanager.com:TLSPORT/gtag/js?id=G-TEST"></script>
<script async src="https://www.google-analytics.com:TLSPORT/analytics.js"></script>
<style>body { margin: 0; background: #fff } .slot { display: block; position: absolute; width: 200px; height: 100px; background: #f00 }</style>
</head><body>
<ins class="adsbygoogle slot" style="left:0;top:0" data-ad-client="ca-pub-1" data-ad-slot="1"></ins>
<div class="ad-banner-300 slot" style="left:300px;top:0"></div>
</body></html>`, "TLSPORT", tlsPort))
			return
		}
		w.Header().Set("Content-Type", "application/javascript")
	})
	srv, tlsSrv := httptest.NewServer(handler), httptest.NewTLSServer(handler)
	defer srv.Close()
	defer tlsSrv.Close()
	tlsPort = tlsSrv.URL[strings.LastIndex(tlsSrv.URL, ":")+1:]
	var blocked []string
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second, Content: filter,
		Flags:     []string{"host-resolver-rules=MAP * 127.0.0.1", "ignore-certificate-errors"},
		OnBlocked: func(c string) { mu.Lock(); blocked = append(blocked, c); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	page := "http://news.test:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:] + "/"
	third := []string{"pagead2.googlesyndication.com", "www.googletagmanager.com", "www.google-analytics.com"}
	red, white := color.RGBA{255, 0, 0, 255}, color.RGBA{255, 255, 255, 255}
	for _, on := range []bool{false, true} {
		mu.Lock()
		hosts, blocked = map[string]int{}, nil
		mu.Unlock()
		kv := []string{"format", "png", "width", "800", "height", "400"}
		if on {
			kv = append(kv, "block_ads", "true", "block_trackers", "true")
		}
		img := render(t, p, opts(t, page, kv...))
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		for _, h := range third {
			if got := hosts[h]; (got == 0) == !on {
				t.Errorf("switches %v: %s received %d requests", on, h, got)
			}
		}
		counts := map[string]int{}
		for _, c := range blocked {
			counts[c]++
		}
		mu.Unlock()
		want := red
		if on {
			want = white
			if counts["ads"] == 0 || counts["trackers"] == 0 {
				t.Errorf("blocked by category: %v", counts)
			}
		}
		for _, pt := range [][2]int{{100, 50}, {400, 50}} {
			if c := img.At(pt[0], pt[1]); !near(c, want, 0) {
				t.Errorf("switches %v: pixel %v = %v, want %v (EasyList element hiding)", on, pt, c, want)
			}
		}
	}
}

// TestHidingRulesFollowThePage: the rules keyed by class or id reach the
// page only for what it has — elements added after the load, one added by
// scripts just before the capture, one in a same-origin frame — and the
// page's own scripts see nothing of the hiding world (no binding, no
// functions). Without block_ads the same elements show: the control.
func TestHidingRulesFollowThePage(t *testing.T) {
	dir := testenv.EasyList(t)
	filter, err := blocking.New(context.Background(), blocking.Config{Lists: map[blocking.Category][]string{
		blocking.Ads: {dir + "/easylist.txt"}}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	site := testenv.HTMLServer(t, `<!doctype html><html><head><style>
body { margin: 0; background: #fff } .slot { display: block; position: absolute; width: 100px; height: 100px; background: #f00 }
iframe { position: absolute; left: 400px; top: 0; width: 150px; height: 150px; border: 0 }
</style></head><body>
<iframe srcdoc="<style>body{margin:0}</style><div class='ad-banner-300' style='width:100px;height:100px;background:#f00'></div>"></iframe>
<script>
setTimeout(() => document.body.insertAdjacentHTML("beforeend", '<div class="ad-banner-300 slot" style="left:0;top:0"></div>'), 300);
setTimeout(() => {
	const seen = ["__shutterHide", "shutterHideRules", "shutterScan"].filter((n) => typeof globalThis[n] !== "undefined");
	if (seen.length > 0) document.body.insertAdjacentHTML("beforeend", '<div style="position:absolute;left:0;top:250px;width:100px;height:100px;background:#00f"></div>');
}, 200);
</script></body></html>`)
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second, Content: filter})
	if err != nil {
		t.Fatal(err)
	}
	red, white := color.RGBA{255, 0, 0, 255}, color.RGBA{255, 255, 255, 255}
	late := `document.body.insertAdjacentHTML("beforeend", '<div class="ad-banner-300 slot" style="left:200px;top:0"></div>')`
	for _, on := range []bool{false, true} {
		want := red
		if on {
			want = white
		}
		for _, kv := range [][]string{
			{"delay", "1"},    // the page adds one after the load
			{"scripts", late}, // and one is added just before the capture
		} {
			kv = append(kv, "format", "png", "width", "600", "height", "400")
			if on {
				kv = append(kv, "block_ads", "true")
			}
			img := render(t, p, opts(t, site.URL, kv...))
			checks := map[string][2]int{"in a frame": {450, 50}}
			if kv[0] == "delay" {
				checks["added after the load"] = [2]int{50, 50}
				if c := img.At(50, 300); !near(c, white, 0) {
					t.Errorf("block_ads %v: the page's scripts saw the hiding world (pixel %v)", on, c)
				}
			} else {
				checks["added by scripts before the capture"] = [2]int{250, 50}
			}
			for name, pt := range checks {
				if c := img.At(pt[0], pt[1]); !near(c, want, 0) {
					t.Errorf("block_ads %v, %s: pixel %v = %v, want %v", on, name, pt, c, want)
				}
			}
		}
	}
}
