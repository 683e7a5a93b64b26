package chromium

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/blocking"
	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/testenv"
)

const benchPage = `<!doctype html><html><head><style>
body{font-family:sans-serif;margin:0;background:linear-gradient(#fafafa,#dde)}
header{background:#224;color:#fff;padding:24px 40px;font-size:28px}
main{display:grid;grid-template-columns:repeat(3,1fr);gap:24px;padding:40px}
.card{background:#fff;border-radius:12px;box-shadow:0 2px 8px #0003;padding:20px;height:160px}
</style></head><body><header>Shutter benchmark page</header><main>
<div class="card"><h2>One</h2><p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p></div>
<div class="card"><h2>Two</h2><p>Sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p></div>
<div class="card"><h2>Three</h2><p>Ut enim ad minim veniam, quis nostrud exercitation ullamco.</p></div>
<div class="card"><h2>Four</h2><p>Duis aute irure dolor in reprehenderit in voluptate velit.</p></div>
<div class="card"><h2>Five</h2><p>Excepteur sint occaecat cupidatat non proident.</p></div>
<div class="card"><h2>Six</h2><p>Sunt in culpa qui officia deserunt mollit anim id est laborum.</p></div>
</main></body></html>`

// benchResults keeps the p50 of each variant so that the ratio benchmark
// can compare Shutter with the raw baseline of the same run.
var benchResults sync.Map // name → time.Duration

// measure runs b.N shots at the given concurrency and reports p50, p95 and
// throughput.
func measure(b *testing.B, name string, conc int, shot func() error) {
	b.Helper()
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for range next {
				t0 := time.Now()
				if err := shot(); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(float64(p(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.95).Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "shots/s")
	b.ReportMetric(0, "ns/op")
	benchResults.Store(name, p(0.50))
}

// BenchmarkRender compares Shutter's render (fresh browser context, emulation,
// network-quiet wait) with a raw chromedp baseline (one browser, a new
// browser context per shot, navigate, capture) on the same page and format.
// Run with: go test -run '^$' -bench Render -benchtime 40x ./internal/chromium
func BenchmarkRender(b *testing.B) {
	path := testenv.Chrome(b)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/tall" {
			io.WriteString(w, tallBenchPage)
			return
		}
		io.WriteString(w, benchPage)
	}))
	defer site.Close()

	p, err := startPool(Config{ExecPath: path, Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := startPool(Config{ExecPath: path, Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	// The production path: the outbound policy checks every request and a
	// per-render proxy carries the traffic (the loopback page is let
	// through by an allow-list, as a public address would be).
	guard := &netguard.Guard{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	guarded, err := startPool(Config{ExecPath: path, Timeout: 30 * time.Second, Outbound: &netguard.Proxy{Guard: guard},
		Check: func(u string) error { return guard.CheckRequest(context.Background(), u) }})
	if err != nil {
		b.Fatal(err)
	}
	rawCtx := raw.list()[0].current().ctx

	slots := []int{1, 10}
	for _, format := range []string{"png", "jpeg"} {
		o := opts(b, site.URL, "format", format, "width", "1280", "height", "720")
		for _, conc := range slots {
			suffix := format + "/c" + strconv.Itoa(conc)
			b.Run("raw/"+suffix, func(b *testing.B) {
				measure(b, "raw/"+suffix, conc, func() error { return rawShot(rawCtx, site.URL, format, false) })
			})
			b.Run("shutter/"+suffix, func(b *testing.B) {
				measure(b, "shutter/"+suffix, conc, func() error {
					_, err := p.Render(context.Background(), o)
					return err
				})
			})
			b.Run("guarded/"+suffix, func(b *testing.B) {
				measure(b, "guarded/"+suffix, conc, func() error {
					_, err := guarded.Render(context.Background(), o)
					return err
				})
			})
			b.Run("ratio/"+suffix, func(b *testing.B) {
				r, ok1 := benchResults.Load("raw/" + suffix)
				s, ok2 := benchResults.Load("shutter/" + suffix)
				g, ok3 := benchResults.Load("guarded/" + suffix)
				if ok1 && ok2 && ok3 {
					b.ReportMetric(float64(s.(time.Duration))/float64(r.(time.Duration)), "p50-shutter/raw")
					b.ReportMetric(float64(g.(time.Duration))/float64(r.(time.Duration)), "p50-guarded/raw")
					b.ReportMetric(0, "ns/op")
				}
			})
		}
	}
	// A 4000 px page captured whole, and thumbnails (the browser scales the
	// capture), each next to the raw program doing the same.
	full := opts(b, site.URL+"/tall", "format", "png", "width", "1280", "height", "720", "full_page", "true", "full_page_scroll", "false")
	b.Run("raw/fullpage-png/c1", func(b *testing.B) {
		measure(b, "raw/fullpage-png/c1", 1, func() error { return rawShot(rawCtx, site.URL+"/tall", "png", true) })
	})
	b.Run("shutter/fullpage-png/c1", func(b *testing.B) {
		measure(b, "shutter/fullpage-png/c1", 1, func() error { _, err := p.Render(context.Background(), full); return err })
	})
	for _, format := range []string{"png", "jpeg"} {
		thumb := opts(b, site.URL, "format", format, "width", "1280", "height", "720", "image_width", "320")
		b.Run("shutter/thumb320-"+format+"/c1", func(b *testing.B) {
			measure(b, "shutter/thumb320-"+format+"/c1", 1, func() error { _, err := p.Render(context.Background(), thumb); return err })
		})
	}
	b.Run("ratio/fullpage-thumb", func(b *testing.B) {
		r, ok1 := benchResults.Load("raw/fullpage-png/c1")
		s, ok2 := benchResults.Load("shutter/fullpage-png/c1")
		full, ok3 := benchResults.Load("shutter/png/c1")
		th, ok4 := benchResults.Load("shutter/thumb320-png/c1")
		if ok1 && ok2 {
			b.ReportMetric(float64(s.(time.Duration))/float64(r.(time.Duration)), "p50-fullpage-shutter/raw")
		}
		if ok3 && ok4 {
			b.ReportMetric(float64(th.(time.Duration))/float64(full.(time.Duration)), "p50-thumb320/full-size")
		}
		b.ReportMetric(0, "ns/op")
	})
}

// tallBenchPage is 4000 CSS pixels tall.
const tallBenchPage = `<!doctype html><body style="margin:0"><div style="height:4000px;background:linear-gradient(#fff,#00f)"></div></body>`

// rawShot is the baseline: what a hand-written chromedp program does; with
// full, it captures the whole page as such a program would.
func rawShot(browserCtx context.Context, url, format string, full bool) error {
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	defer func() { go cancel() }()
	tctx, tcancel := context.WithTimeout(ctx, 30*time.Second)
	defer tcancel()
	q := int64(80)
	params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormat(format)}
	if format != "png" {
		params.Quality = &q
	}
	return chromedp.Do(tctx,
		call(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1280, Height: 720, DeviceScaleFactor: 1}),
		chromedp.Navigate(url),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if full {
				m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
				if err != nil {
					return err
				}
				beyond := true
				params.CaptureBeyondViewport = &beyond
				params.Clip = &page.Viewport{Width: 1280, Height: m.CSSContentSize.Height, Scale: 1}
			}
			_, err := cdp.Call(ctx, t, page.CaptureScreenshot, params)
			return err
		}),
	)
}

// BenchmarkBlocking renders a page with 100 subresources (96 images and 4
// ad and tracker scripts by path) with and without block_ads and
// block_trackers on EasyList and EasyPrivacy: the cost of interception,
// matching and the cosmetic stylesheet.
func BenchmarkBlocking(b *testing.B) {
	dir := testenv.EasyList(b)
	filter, err := blocking.New(context.Background(), blocking.Config{Lists: map[blocking.Category][]string{
		blocking.Ads: {dir + "/easylist.txt"}, blocking.Trackers: {dir + "/easyprivacy.txt"}}}, quietLog)
	if err != nil {
		b.Fatal(err)
	}
	var page strings.Builder
	page.WriteString(`<!doctype html><body style="margin:0">`)
	for i := range 96 {
		fmt.Fprintf(&page, `<img src="/img/%d.png" width="20" height="20">`, i)
	}
	for _, s := range []string{"/pagead/js/adsbygoogle.js", "/gtag/js?id=G-1", "/analytics.js", "/ads/banner.js"} {
		fmt.Fprintf(&page, `<script async src="%s"></script>`, s)
	}
	pixel := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, page.String())
		case strings.HasSuffix(r.URL.Path, ".png"):
			w.Header().Set("Content-Type", "image/png")
			w.Write(pixel)
		default:
			w.Header().Set("Content-Type", "application/javascript")
		}
	}))
	defer site.Close()
	p, err := startPool(Config{ExecPath: testenv.Chrome(b), Timeout: 30 * time.Second, Content: filter})
	if err != nil {
		b.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		kv := []string{"format", "jpeg", "width", "1280", "height", "720"}
		name := "blocking-off"
		if on {
			kv, name = append(kv, "block_ads", "true", "block_trackers", "true"), "blocking-on"
		}
		o := opts(b, site.URL+"/", kv...)
		b.Run(name+"/100-subresources", func(b *testing.B) {
			measure(b, name, 1, func() error { _, err := p.Render(context.Background(), o); return err })
		})
	}
	b.Run("ratio/blocking", func(b *testing.B) {
		off, ok1 := benchResults.Load("blocking-off")
		on, ok2 := benchResults.Load("blocking-on")
		if ok1 && ok2 {
			b.ReportMetric(float64(on.(time.Duration))/float64(off.(time.Duration)), "p50-on/off")
		}
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkRenderPhases is the breakdown of a guarded render (outbound
// policy and per-render proxy on) of the benchmark page, 1280×720 PNG:
// the p50 of each phase as OnPhase (shutter_render_phase_seconds) sees it.
func BenchmarkRenderPhases(b *testing.B) {
	path := testenv.Chrome(b)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, benchPage)
	}))
	defer site.Close()
	var mu sync.Mutex
	phases := map[string][]time.Duration{}
	guard := &netguard.Guard{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	p, err := startPool(Config{ExecPath: path, Timeout: 30 * time.Second, Outbound: &netguard.Proxy{Guard: guard},
		Check: func(u string) error { return guard.CheckRequest(context.Background(), u) },
		OnPhase: func(phase string, d time.Duration) {
			mu.Lock()
			phases[phase] = append(phases[phase], d)
			mu.Unlock()
		}})
	if err != nil {
		b.Fatal(err)
	}
	o := opts(b, site.URL, "format", "png", "width", "1280", "height", "720")
	measure(b, "phases/png/c1", 1, func() error { _, err := p.Render(context.Background(), o); return err })
	for _, name := range []string{"open", "setup", "navigate", "wait", "capture"} {
		l := phases[name]
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds())/1000, name+"-p50-ms")
	}
}
