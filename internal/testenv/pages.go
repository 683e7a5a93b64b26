package testenv

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// HTMLServer serves html at every path on a loopback port until the test
// ends.
func HTMLServer(tb testing.TB, html string) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, html)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// BenchPage is the page the render benchmarks and the load test take: a
// header and six cards on a gradient, with shadows and rounded corners.
const BenchPage = `<!doctype html><html><head><style>
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

// RawShot is the baseline of the benchmarks: what a hand-written chromedp
// program does for one screenshot — a new browser context on the browser
// of browserCtx, the viewport set to 1280×720, navigate, capture (JPEG at
// quality 80); with full, the whole page, as such a program would. The
// tab's closing is added to closing, so that a benchmark can wait for it.
func RawShot(browserCtx context.Context, closing *sync.WaitGroup, url, format string, full bool) error {
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	closing.Add(1)
	defer func() {
		go func() {
			defer closing.Done()
			cancel()
		}()
	}()
	tctx, tcancel := context.WithTimeout(ctx, 30*time.Second)
	defer tcancel()
	q := int64(80)
	params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormat(format)}
	if format != "png" {
		params.Quality = &q
	}
	return chromedp.Do(tctx,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetDeviceMetricsOverride,
				emulation.SetDeviceMetricsOverrideParams{Width: 1280, Height: 720, DeviceScaleFactor: 1})
			return err
		}),
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

// Interleave runs b.N rounds in which each variant takes one shot, in an
// order that rotates each round, so that a drift of the machine hits them
// alike; settle runs after each shot, untimed. It returns each variant's
// times, sorted.
func Interleave(b *testing.B, variants map[string]func() error, settle func()) map[string][]time.Duration {
	b.Helper()
	names := slices.Sorted(maps.Keys(variants))
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for j := range names {
			name := names[(i+j)%len(names)]
			t0 := time.Now()
			if err := variants[name](); err != nil {
				b.Fatal(name, err)
			}
			lat[name] = append(lat[name], time.Since(t0))
			b.StopTimer()
			settle()
			b.StartTimer()
		}
	}
	b.StopTimer()
	for _, l := range lat {
		slices.Sort(l)
	}
	return lat
}

// Quantile is the q-quantile of sorted times.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
