package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/testenv"
)

// TestLoad holds a steady request rate above the pool's capacity against a
// real server and reports what happened. It runs only when SHUTTER_LOAD is
// set to a duration (make load), since it takes minutes:
//
//	SHUTTER_LOAD=3m SHUTTER_LOAD_RATE=20 go test -run TestLoad -v ./cmd/server
func TestLoad(t *testing.T) {
	dur, err := time.ParseDuration(os.Getenv("SHUTTER_LOAD"))
	if err != nil {
		t.Skip("set SHUTTER_LOAD to a duration to run the load test")
	}
	rate := 20
	if r, err := strconv.Atoi(os.Getenv("SHUTTER_LOAD_RATE")); err == nil && r > 0 {
		rate = r
	}
	chrome := testenv.Chrome(t)
	site := testenv.HTMLServer(t, testenv.BenchPage)
	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome,
		"ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error", "MAX_CONCURRENT_SCREENSHOTS": "10",
		"MAX_QUEUED_SCREENSHOTS": "20", "QUEUE_TIMEOUT_MS": "10000"}
	key := newKey(t, env, "--plan", "enterprise", "--rate-limit", "1000000", "--monthly-quota", "0")
	m := startMain(t, env)
	q := url.Values{"api_key": {key}, "url": {site.URL}, "format": {"png"}, "width": {"1280"}, "height": {"720"}}
	target := "http://" + m.Addr + "/v1/screenshots/take?" + q.Encode()

	type result struct {
		status int
		d      time.Duration
	}
	var mu sync.Mutex
	var results []result
	var bad []string
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	var wg sync.WaitGroup
	var samples []string
	var maxWaiting float64
	var rssFirst, rssLast int64
	stopSampling := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			var h struct {
				Checks []struct {
					Name    string
					Details map[string]any
				}
			}
			resp, err := http.Get("http://" + m.Addr + "/health")
			if err == nil {
				json.NewDecoder(resp.Body).Decode(&h)
				resp.Body.Close()
			}
			waiting := 0.0
			for _, c := range h.Checks {
				if c.Name == "queue" {
					waiting, _ = c.Details["waiting"].(float64)
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			rss := chromeRSS()
			mu.Lock()
			maxWaiting = max(maxWaiting, waiting)
			if n == 5 { // after a minute of warm-up
				rssFirst = rss
			}
			rssLast = rss
			samples = append(samples, fmt.Sprintf("t=%ds waiting=%.0f go-heap=%dMiB chromium-rss=%dMiB", (n+1)*10, waiting, ms.HeapInuse>>20, rss>>20))
			mu.Unlock()
		}
	}()
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for next := start; time.Since(start) < dur; next = next.Add(interval) {
		time.Sleep(time.Until(next))
		wg.Go(func() {
			t0 := time.Now()
			resp, err := client.Get(target)
			if err != nil {
				mu.Lock()
				bad = append(bad, err.Error())
				mu.Unlock()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			d := time.Since(t0)
			ok := false
			switch resp.StatusCode {
			case 200:
				_, _, err := image.Decode(bytes.NewReader(body))
				ok = err == nil
			default:
				var e map[string]string
				ok = json.Unmarshal(body, &e) == nil && e["error"] != "" && e["requestId"] != ""
			}
			mu.Lock()
			results = append(results, result{resp.StatusCode, d})
			if !ok {
				bad = append(bad, fmt.Sprintf("%d %.100s", resp.StatusCode, body))
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	close(stopSampling)
	elapsed := time.Since(start)

	mu.Lock()
	defer mu.Unlock()
	by := map[int][]time.Duration{}
	for _, r := range results {
		by[r.status] = append(by[r.status], r.d)
	}
	pct := func(ds []time.Duration, q float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		slices.Sort(ds)
		return ds[min(len(ds)-1, int(q*float64(len(ds))))]
	}
	var report strings.Builder
	fmt.Fprintf(&report, "load: %d requests at %d/s for %s on %d cores\n", len(results), rate, elapsed.Round(time.Second), runtime.NumCPU())
	for code, ds := range by {
		fmt.Fprintf(&report, "  %d: %d (p50 %s, p99 %s)\n", code, len(ds), pct(ds, .5).Round(time.Millisecond), pct(ds, .99).Round(time.Millisecond))
	}
	fmt.Fprintf(&report, "  served %.1f images/s; max waiting %.0f; chromium RSS %d MiB after warm-up, %d MiB at the end\n",
		float64(len(by[200]))/elapsed.Seconds(), maxWaiting, rssFirst>>20, rssLast>>20)
	for _, s := range samples {
		fmt.Fprintf(&report, "  %s\n", s)
	}
	t.Log("\n" + report.String())

	if len(bad) > 0 {
		t.Errorf("%d answers were neither an image nor an error object, e.g. %q", len(bad), bad[0])
	}
	for code := range by {
		if code != 200 && code != 503 {
			t.Errorf("unexpected status %d", code)
		}
	}
	if maxWaiting > 20 {
		t.Errorf("the queue grew to %.0f, past MAX_QUEUED_SCREENSHOTS", maxWaiting)
	}
	if p := pct(by[503], .99); p > time.Second {
		t.Errorf("refusals are slow: p99 %s", p)
	}
	if p := pct(by[200], .99); p > 40*time.Second {
		t.Errorf("served p99 %s exceeds the queue wait plus the render timeout", p)
	}
	if rssFirst > 0 && rssLast > rssFirst*3/2 {
		t.Errorf("chromium memory grew from %d MiB to %d MiB", rssFirst>>20, rssLast>>20)
	}
}

// chromeRSS sums the resident memory of the headless shells.
func chromeRSS() int64 {
	out, _ := exec.Command("sh", "-c", "for p in $(pgrep -f chromium-headless-shell); do grep VmRSS /proc/$p/status; done").Output()
	var total int64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}
