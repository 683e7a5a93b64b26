package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/queue"
	"github.com/shutterhq/shutter/internal/s3store"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
	"github.com/shutterhq/shutter/internal/usage"
)

// jpegRenderer returns an image of the size of a 1280×720 JPEG at q80.
type jpegRenderer struct{}

func (jpegRenderer) Render(ctx context.Context, o *screenshot.Options) (*screenshot.Image, error) {
	return &screenshot.Image{Data: make([]byte, 120<<10), Format: screenshot.JPEG}, nil
}

// BenchmarkCacheHit measures a whole cache hit through HTTP (key lookup,
// rate limit, cache identity, store read, response) on each store, and
// reports p50 and p99.
func BenchmarkCacheHit(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stores := map[string]func(b *testing.B) screenshot.Cache{
		"dir": func(b *testing.B) screenshot.Cache {
			c, err := embedded.OpenCache(filepath.Join(b.TempDir(), "cache"), log)
			if err != nil {
				b.Fatal(err)
			}
			return c
		},
		"s3": func(b *testing.B) screenshot.Cache {
			s3 := testenv.NewS3(b)
			c, err := s3store.Open(context.Background(), s3store.Config{Endpoint: s3.URL(), Bucket: "bench", Region: "us-east-1",
				AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey, PathStyle: true}, log)
			if err != nil {
				b.Fatal(err)
			}
			return c
		},
	}
	for _, name := range []string{"dir", "s3"} {
		b.Run(name, func(b *testing.B) {
			st, err := embedded.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			secret := addKey(b, st, screenshot.PlanEnterprise, nil)
			srv := New(Deps{
				Parser: screenshot.NewParser(screenshot.DefaultLimits), Keys: &screenshot.KeyCache{KeyStore: st, TTL: time.Minute},
				Guard: &netguard.Guard{}, Queue: queue.New(1, 1, time.Second), Renderer: jpegRenderer{}, Limiter: embedded.NewLimiter(), Quota: st,
				Plans:      screenshot.Plans{Enterprise: screenshot.PlanLimits{Rate: 1 << 30}},
				RateWindow: time.Minute, HoldTTL: time.Minute, Cache: stores[name](b),
			}, log)
			ts := httptest.NewServer(srv)
			defer ts.Close()
			q := url.Values{"api_key": {secret}, "url": {"http://8.8.8.8/"}, "is_cached": {"true"}}
			u := ts.URL + "/v1/screenshots/take?" + q.Encode()
			prime(b, u)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				resp, err := http.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "HIT" {
					b.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("X-Cache"))
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}

// prime fills the cache entry with one request through the handler.
func prime(b *testing.B, u string) {
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("priming: %d", resp.StatusCode)
	}
}

// BenchmarkCacheHitUsageHistory measures cache hits with the usage history
// on and off, interleaved in one run (two servers on one store, requests
// alternating), and reports both p50s and their ratio: the history's cost
// on the path where it matters most.
func BenchmarkCacheHitUsageHistory(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := embedded.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cache, err := embedded.OpenCache(filepath.Join(b.TempDir(), "cache"), log)
	if err != nil {
		b.Fatal(err)
	}
	secret := addKey(b, st, screenshot.PlanEnterprise, nil)
	history := &usage.Recorder{Store: st, Log: log}
	go history.Run()
	defer history.Close(10 * time.Second)
	urls := make([]string, 2)
	for i, h := range []*usage.Recorder{nil, history} {
		srv := New(Deps{
			Parser: screenshot.NewParser(screenshot.DefaultLimits), Keys: &screenshot.KeyCache{KeyStore: st, TTL: time.Minute},
			Guard: &netguard.Guard{}, Queue: queue.New(1, 1, time.Second), Renderer: jpegRenderer{}, Limiter: embedded.NewLimiter(), Quota: st,
			Plans:      screenshot.Plans{Enterprise: screenshot.PlanLimits{Rate: 1 << 30}},
			RateWindow: time.Minute, HoldTTL: time.Minute, Cache: cache, History: h,
		}, log)
		ts := httptest.NewServer(srv)
		defer ts.Close()
		q := url.Values{"api_key": {secret}, "url": {"http://8.8.8.8/"}, "is_cached": {"true"}}
		urls[i] = ts.URL + "/v1/screenshots/take?" + q.Encode()
		prime(b, urls[i])
	}
	lat := [2][]time.Duration{}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		which := i % 2
		i++
		t0 := time.Now()
		resp, err := http.Get(urls[which])
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%d", resp.StatusCode)
		}
		lat[which] = append(lat[which], time.Since(t0))
	}
	p50 := func(l []time.Duration) float64 {
		if len(l) == 0 {
			return 0
		}
		slices.Sort(l)
		return float64(l[len(l)/2].Microseconds()) / 1000
	}
	off, on := p50(lat[0]), p50(lat[1])
	b.ReportMetric(off, "p50-off-ms")
	b.ReportMetric(on, "p50-on-ms")
	if off > 0 {
		b.ReportMetric(on/off, "on/off")
	}
}
