package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/testenv"
)

// BenchmarkTakeUncached compares uncached screenshots through the HTTP
// endpoint, on the guarded production path (the default outbound policy,
// the page's loopback address allowed by ALLOWED_PRIVATE_TARGETS, every
// request checked in the browser, all traffic through the render's own
// proxy; SQLite, a local browser), with a hand-written chromedp program
// (testenv.RawShot: a new browser context per shot) in the same process,
// on the same page, size and format.
//
// "gaps": one at a time, the two taking turns, with a pause after each
// shot (untimed) in which what a shot leaves in the background ends — as
// requests from <img> tags come. "back to back": one after another with
// no pause, shots per second. It prints one table with the ratio to raw.
// Run with: go test -run '^$' -bench TakeUncached -benchtime 30x ./cmd/server
func BenchmarkTakeUncached(b *testing.B) {
	chrome := testenv.Chrome(b)
	site := testenv.HTMLServer(b, testenv.BenchPage)
	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATA_DIR": b.TempDir(), "CHROME_PATH": chrome,
		"ALLOWED_PRIVATE_TARGETS": "127.0.0.1", "LOG_LEVEL": "error"}
	key := newKey(b, env, "--plan", "enterprise", "--rate-limit", "1000000", "--monthly-quota", "0")
	m := startMain(b, env)

	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox)...)
	defer acancel()
	rawCtx, rawCancel := chromedp.NewContext(actx)
	defer rawCancel()
	if err := chromedp.Do(rawCtx); err != nil {
		b.Fatal(err)
	}
	var closing sync.WaitGroup

	type row struct {
		name          string
		p50, p95, tps float64
	}
	rows := map[string]row{} // a sub-benchmark runs with b.N = 1 first: the last run counts
	var order []string
	add := func(r row) {
		if _, ok := rows[r.name]; !ok {
			order = append(order, r.name)
		}
		rows[r.name] = r
	}
	for _, format := range []string{"png", "jpeg"} {
		q := url.Values{"api_key": {key}, "url": {site.URL}, "format": {format}, "width": {"1280"}, "height": {"720"}}
		variants := map[string]func() error{
			"raw":     func() error { return testenv.RawShot(rawCtx, &closing, site.URL, format, false) },
			"shutter": func() error { return takeImage(m, q) },
		}
		b.Run("gaps/"+format, func(b *testing.B) {
			lat := testenv.Interleave(b, variants, func() {
				closing.Wait()
				time.Sleep(300 * time.Millisecond)
			})
			for _, name := range []string{"raw", "shutter"} {
				l := lat[name]
				add(row{name: name + "/" + format + "/gaps", p50: msOf(testenv.Quantile(l, 0.5)), p95: msOf(testenv.Quantile(l, 0.95))})
			}
			b.ReportMetric(rows["shutter/"+format+"/gaps"].p50/rows["raw/"+format+"/gaps"].p50, "p50-shutter/raw")
			b.ReportMetric(0, "ns/op")
		})
		for _, name := range []string{"raw", "shutter"} {
			b.Run("back-to-back/"+name+"/"+format, func(b *testing.B) {
				time.Sleep(300 * time.Millisecond)
				start := time.Now()
				for range b.N {
					if err := variants[name](); err != nil {
						b.Fatal(name, err)
					}
				}
				tps := float64(b.N) / time.Since(start).Seconds()
				b.ReportMetric(tps, "shots/s")
				b.ReportMetric(0, "ns/op")
				add(row{name: name + "/" + format + "/back-to-back", tps: tps})
				closing.Wait()
			})
		}
	}
	var once sync.Once
	b.Run("table", func(b *testing.B) {
		once.Do(func() {
			fmt.Printf("\n%-28s %10s %10s %10s %10s\n", "variant", "p50 ms", "p95 ms", "shots/s", "÷ raw")
			for _, name := range order {
				r := rows[name]
				raw := rows["raw"+name[strings.Index(name, "/"):]]
				if r.tps > 0 { // more is better
					fmt.Printf("%-28s %10s %10s %10.2f %10.3f\n", r.name, "", "", r.tps, r.tps/raw.tps)
				} else { // less is better
					fmt.Printf("%-28s %10.1f %10.1f %10s %10.3f\n", r.name, r.p50, r.p95, "", r.p50/raw.p50)
				}
			}
		})
		b.ReportMetric(0, "ns/op")
	})
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// takeImage takes one uncached screenshot through the HTTP endpoint.
func takeImage(m *Main, q url.Values) error {
	resp, err := http.Get("http://" + m.Addr + "/v1/screenshots/take?" + q.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || len(body) < 1000 {
		return fmt.Errorf("status %d, %d bytes: %.200s", resp.StatusCode, len(body), body)
	}
	return nil
}
