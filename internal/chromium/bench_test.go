package chromium

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/blocking"
	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/testenv"
)

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
	p50, p95 := testenv.Quantile(lat, 0.5), testenv.Quantile(lat, 0.95)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "shots/s")
	b.ReportMetric(0, "ns/op")
	benchResults.Store(name, p50)
	benchThroughput.Store(name, float64(len(lat))/elapsed.Seconds())
}

// benchThroughput keeps each variant's shots per second.
var benchThroughput sync.Map // name → float64

// interleave runs b.N rounds in which each variant takes one shot, in a
// rotating order, and reports each variant's p50 and p95 and its p50 as a
// ratio of raw's. settle runs after each shot, untimed: it waits until
// the work a shot leaves in the background (disposing of its context,
// opening a spare) is done, so that none of it lands in the next
// variant's time — requests with gaps between them, as an <img> on a page
// sends them.
func interleave(b *testing.B, suffix string, settle func(), variants map[string]func() error) {
	b.Helper()
	lat := testenv.Interleave(b, variants, settle)
	p50 := map[string]time.Duration{}
	for name, l := range lat {
		p50[name] = testenv.Quantile(l, 0.5)
		b.ReportMetric(float64(p50[name].Microseconds())/1000, name+"-p50-ms")
		benchResults.Store(name+"/"+suffix, p50[name])
		benchTail.Store(name+"/"+suffix, testenv.Quantile(l, 0.95))
	}
	for name := range lat {
		if name != "raw" {
			b.ReportMetric(float64(p50[name])/float64(p50["raw"]), name+"/raw")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// benchTail keeps the p95 of the interleaved variants.
var benchTail sync.Map

// settled waits until the pools have no disposal running and no spare
// being opened.
func settled(pools ...*Pool) {
	for _, p := range pools {
		p.jobs.Wait()
		for _, b := range p.list() {
			if c := b.current(); c != nil {
				c.spares.settled()
			}
		}
	}
}

// rawDisposals are the raw program's tab closings still running.
var rawDisposals sync.WaitGroup

// printTable prints the run as one table: each row's figures and its
// ratio to raw's (p50 at concurrency 1, where less is better; shots per
// second at 4 and 10, where more is).
func printTable() {
	fmt.Println()
	fmt.Printf("%-26s %10s %10s %10s %12s\n", "variant", "p50 ms", "p95 ms", "shots/s", "÷ raw")
	for _, format := range []string{"png", "jpeg"} {
		for _, v := range []string{"raw", "shutter", "guarded"} {
			name := v + "/" + format + "/c1"
			p50, ok := benchResults.Load(name)
			if !ok {
				continue
			}
			raw, _ := benchResults.Load("raw/" + format + "/c1")
			tail, _ := benchTail.Load(name)
			fmt.Printf("%-26s %10.1f %10.1f %10s %12.3f\n", name, ms(p50), ms(tail), "", float64(p50.(time.Duration))/float64(raw.(time.Duration)))
		}
		for _, conc := range []string{"c1", "c4", "c10"} {
			if conc == "c1" {
				// One request after another, no gap: shots per second.
				conc = "seq"
			}
			for _, v := range []string{"raw", "shutter", "guarded"} {
				name := v + "/" + format + "/" + conc
				tput, ok := benchThroughput.Load(name)
				if !ok {
					continue
				}
				raw, _ := benchThroughput.Load("raw/" + format + "/" + conc)
				p50, _ := benchResults.Load(name)
				fmt.Printf("%-26s %10.1f %10s %10.2f %12.3f\n", name, ms(p50), "", tput.(float64), tput.(float64)/raw.(float64))
			}
		}
		if pss, ok := benchResults.Load("pss/" + format + "/c10"); ok {
			fmt.Printf("%-26s %10s %10s %10s %9.0f MiB\n", "guarded/"+format+"/c10 PSS", "", "", "", float64(pss.(time.Duration))/(1<<20))
		}
	}
}

func ms(v any) float64 {
	d, _ := v.(time.Duration)
	return float64(d.Microseconds()) / 1000
}

// browserPSS is the proportional set size of every browser process of the
// pool: each browser's process and its descendants.
func browserPSS(p *Pool) int64 {
	var total int64
	for _, b := range p.list() {
		if c := b.current(); c != nil && c.pid > 0 {
			for _, pid := range descendants(c.pid) {
				total += pssOf(pid)
			}
		}
	}
	return total
}

// descendants is pid and every process below it, from /proc.
func descendants(root int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The parent is the second field after the command's ")".
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		for pid, pp := range parent {
			if pp == out[i] {
				out = append(out, pid)
			}
		}
	}
	return out
}

// pssOf is a process's proportional set size in bytes.
func pssOf(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
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
		io.WriteString(w, testenv.BenchPage)
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

	for _, format := range []string{"png", "jpeg"} {
		o := opts(b, site.URL, "format", format, "width", "1280", "height", "720")
		// One at a time, interleaved: raw, Shutter and guarded shots take
		// turns, so that the machine's drift hits the three alike.
		suffix := format + "/c1"
		b.Run("interleaved/"+suffix, func(b *testing.B) {
			interleave(b, suffix, func() { rawDisposals.Wait(); settled(p, guarded) }, map[string]func() error{
				"raw":     func() error { return testenv.RawShot(rawCtx, &rawDisposals, site.URL, format, false) },
				"shutter": func() error { _, err := p.Render(context.Background(), o); return err },
				"guarded": func() error { _, err := guarded.Render(context.Background(), o); return err },
			})
		})
		for _, conc := range []int{1, 4, 10} {
			suffix := format + "/c" + strconv.Itoa(conc)
			if conc == 1 {
				suffix = format + "/seq"
			}
			b.Run("raw/"+suffix, func(b *testing.B) {
				measure(b, "raw/"+suffix, conc, func() error { return testenv.RawShot(rawCtx, &rawDisposals, site.URL, format, false) })
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
				if conc == 10 {
					// Memory at full load: this process (the pool, the
					// proxies) and every browser process, proportional set.
					pss := pssOf(os.Getpid()) + browserPSS(guarded)
					b.ReportMetric(float64(pss)/(1<<20), "pss-MiB")
					benchResults.Store("pss/"+suffix, time.Duration(pss))
				}
			})
			b.Run("ratio/"+suffix, func(b *testing.B) {
				r, ok1 := benchThroughput.Load("raw/" + suffix)
				s, ok2 := benchThroughput.Load("shutter/" + suffix)
				g, ok3 := benchThroughput.Load("guarded/" + suffix)
				if ok1 && ok2 && ok3 {
					b.ReportMetric(s.(float64)/r.(float64), "shots/s-shutter/raw")
					b.ReportMetric(g.(float64)/r.(float64), "shots/s-guarded/raw")
					b.ReportMetric(0, "ns/op")
				}
			})
		}
	}
	// A 4000 px page captured whole, and thumbnails (the browser scales the
	// capture), each next to the raw program doing the same.
	full := opts(b, site.URL+"/tall", "format", "png", "width", "1280", "height", "720", "full_page", "true", "full_page_scroll", "false")
	b.Run("raw/fullpage-png/c1", func(b *testing.B) {
		measure(b, "raw/fullpage-png/c1", 1, func() error { return testenv.RawShot(rawCtx, &rawDisposals, site.URL+"/tall", "png", true) })
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
	var once sync.Once // a sub-benchmark runs with b.N = 1 first
	b.Run("table", func(b *testing.B) { once.Do(printTable); b.ReportMetric(0, "ns/op") })
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
	// The plain benchmark page (no ads, one request): what element hiding
	// costs a render by itself, block_ads on and off taking turns.
	plain := testenv.HTMLServer(b, testenv.BenchPage)
	kv := []string{"format", "jpeg", "width", "1280", "height", "720"}
	off, on := opts(b, plain.URL, kv...), opts(b, plain.URL, append(kv, "block_ads", "true")...)
	b.Run("plain-page", func(b *testing.B) {
		interleave(b, "plain-page", func() { settled(p) }, map[string]func() error{
			"raw":       func() error { _, err := p.Render(context.Background(), off); return err },
			"block_ads": func() error { _, err := p.Render(context.Background(), on); return err },
		})
	})
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
	site := testenv.HTMLServer(b, testenv.BenchPage)
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
	// With gaps (what a shot leaves in the background ends before the next
	// starts) and back to back.
	for _, gaps := range []bool{true, false} {
		name := "back-to-back"
		if gaps {
			name = "gaps"
		}
		b.Run(name, func(b *testing.B) {
			mu.Lock()
			clear(phases)
			mu.Unlock()
			var total []time.Duration
			for range b.N {
				t0 := time.Now()
				if _, err := p.Render(context.Background(), o); err != nil {
					b.Fatal(err)
				}
				total = append(total, time.Since(t0))
				if gaps {
					settled(p)
					time.Sleep(50 * time.Millisecond)
				}
			}
			slices.Sort(total)
			b.ReportMetric(float64(testenv.Quantile(total, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(0, "ns/op")
			mu.Lock()
			defer mu.Unlock()
			for _, name := range []string{"open", "setup", "navigate", "wait", "capture"} {
				l := phases[name]
				if len(l) == 0 {
					continue
				}
				slices.Sort(l)
				b.ReportMetric(float64(testenv.Quantile(l, 0.5).Microseconds())/1000, name+"-p50-ms")
			}
		})
	}
}
