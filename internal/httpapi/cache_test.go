package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/queue"
	"github.com/shutterhq/shutter/internal/redisstore"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

// countingRenderer returns a different image for every render, so that a
// served cache entry can be told from a fresh render.
type countingRenderer struct {
	mu    sync.Mutex
	calls int
	gate  chan struct{}
}

func (c *countingRenderer) Render(ctx context.Context, o *screenshot.Options) (*screenshot.Image, error) {
	c.mu.Lock()
	c.calls++
	n := c.calls
	gate := c.gate
	c.mu.Unlock()
	if gate != nil {
		<-gate
	}
	// A full-page capture "cut" at its maximum height, as the renderer
	// reports one.
	cut := o.FullPage && o.FullPageMaxHeight < screenshot.MaxCaptureSide
	return &screenshot.Image{Data: []byte("render-" + strconv.Itoa(n)), Format: o.Format, Truncated: cut}, nil
}

func (c *countingRenderer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

type failingCache struct{}

func (failingCache) Get(context.Context, string) (*screenshot.CacheEntry, error) {
	return nil, errors.New("storage unreachable")
}
func (failingCache) Put(context.Context, string, *screenshot.CacheEntry) error {
	return errors.New("storage unreachable")
}

type cacheFixture struct {
	srv    *httptest.Server
	render *countingRenderer
	store  *embedded.Store
	secret string
	queue  *queue.Queue
}

func newCacheFixture(t *testing.T, cache screenshot.Cache, quota int) *cacheFixture {
	t.Helper()
	return newCacheFixtureGuard(t, cache, quota, &netguard.Guard{})
}

func newCacheFixtureGuard(t *testing.T, cache screenshot.Cache, quota int, guard *netguard.Guard) *cacheFixture {
	t.Helper()
	dir := t.TempDir()
	st, err := embedded.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if cache == nil {
		dc, err := embedded.OpenCache(filepath.Join(dir, "cache"), log)
		if err != nil {
			t.Fatal(err)
		}
		cache = dc
	}
	f := &cacheFixture{render: &countingRenderer{}, store: st, queue: queue.New(1, 50, 5*time.Second)}
	f.secret = addKey(t, st, screenshot.PlanFree, nil)
	f.srv = httptest.NewServer(New(Deps{
		Parser: screenshot.NewParser(screenshot.DefaultLimits), Keys: st, Guard: guard,
		Queue: f.queue, Renderer: f.render, Limiter: embedded.NewLimiter(), Quota: st,
		Plans: screenshot.Plans{Free: screenshot.PlanLimits{Rate: 1000, Quota: quota}}, RateWindow: time.Minute,
		HoldTTL: time.Minute, Cache: cache,
	}, log))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *cacheFixture) do(t *testing.T, q url.Values, h http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/screenshots/take?"+q.Encode(), nil)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (f *cacheFixture) q(kv ...string) url.Values {
	q := url.Values{"api_key": {f.secret}, "url": {"http://8.8.8.8/page"}, "is_cached": {"true"}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

func TestCacheHitMissAndHeaders(t *testing.T) {
	f := newCacheFixture(t, nil, 0)
	resp, body := f.do(t, f.q("cache_ttl", "7200"), nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "MISS" || body != "render-1" {
		t.Fatalf("first: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Cache-Control") != "public, max-age=7199" && resp.Header.Get("Cache-Control") != "public, max-age=7200" {
		t.Errorf("miss headers: %v", resp.Header)
	}
	time.Sleep(1100 * time.Millisecond)
	// Parameter order and spelled-out defaults do not matter.
	q := f.q("cache_ttl", "7200", "width", "1280", "format", "jpeg", "quality", "80")
	resp, body = f.do(t, q, nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "HIT" || body != "render-1" || resp.Header.Get("ETag") != etag {
		t.Fatalf("second: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	cc := resp.Header.Get("Cache-Control")
	age, _ := strconv.Atoi(strings.TrimPrefix(cc, "public, max-age="))
	if age < 7190 || age > 7199 || resp.Header.Get("Content-Type") != "image/jpeg" || resp.Header.Get("Content-Length") != "8" ||
		resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("X-RateLimit-Limit") == "" {
		t.Errorf("hit headers: %v", resp.Header)
	}
	// If-None-Match with the current ETag: 304 and no body.
	resp, body = f.do(t, q, http.Header{"If-None-Match": {`"other", ` + etag}})
	if resp.StatusCode != 304 || body != "" || resp.Header.Get("ETag") != etag {
		t.Errorf("conditional: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = f.do(t, q, http.Header{"If-None-Match": {`"stale"`}})
	if resp.StatusCode != 200 {
		t.Errorf("stale tag: %d", resp.StatusCode)
	}
	// cache_key separates entries; so does an option that changes the pixels.
	if _, body = f.do(t, f.q("cache_key", "v2"), nil); body != "render-2" {
		t.Errorf("cache_key: %q", body)
	}
	if _, body = f.do(t, f.q("width", "800"), nil); body != "render-3" {
		t.Errorf("other width: %q", body)
	}
	// Another key never receives this key's image.
	other := addKey(t, f.store, screenshot.PlanFree, nil)
	qo := f.q()
	qo.Set("api_key", other)
	if _, body = f.do(t, qo, nil); body != "render-4" {
		t.Errorf("another key: %q", body)
	}
	// Uncached requests always render and carry no X-Cache.
	qu := f.q()
	qu.Del("is_cached")
	if resp, body = f.do(t, qu, nil); body != "render-5" || resp.Header.Get("X-Cache") != "" || resp.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("uncached: %q %v", body, resp.Header)
	}
}

func TestCacheCoalescing(t *testing.T) {
	f := newCacheFixture(t, nil, 0)
	f.render.gate = make(chan struct{})
	var wg sync.WaitGroup
	bodies := make([]string, 10)
	for i := range bodies {
		wg.Go(func() {
			resp, body := f.do(t, f.q(), nil)
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
			bodies[i] = body
		})
	}
	time.Sleep(300 * time.Millisecond)
	close(f.render.gate)
	wg.Wait()
	if n := f.render.count(); n != 1 {
		t.Errorf("renders = %d, want 1", n)
	}
	for _, b := range bodies {
		if b != "render-1" {
			t.Errorf("bodies = %q", bodies)
			break
		}
	}
}

func TestCacheHitsTakeNoSlotAndNoQuota(t *testing.T) {
	f := newCacheFixture(t, nil, 2)
	f.do(t, f.q(), nil) // fills the entry, uses 1 of 2
	// Hold the only slot with an uncached render.
	f.render.mu.Lock()
	f.render.gate = make(chan struct{})
	f.render.mu.Unlock()
	qu := f.q("cache_key", "busy")
	qu.Del("is_cached")
	done := make(chan struct{})
	go func() { defer close(done); f.do(t, qu, nil) }()
	for f.queue.Stats().Active == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	for range 5 {
		if resp, body := f.do(t, f.q(), nil); resp.StatusCode != 200 || body != "render-1" {
			t.Fatalf("hit while the slot is busy: %d %q", resp.StatusCode, body)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("hits waited %s", d)
	}
	close(f.render.gate)
	<-done
	keys, _ := f.store.ListKeys(context.Background())
	period, _ := screenshot.PeriodOf(time.Now())
	if n, _ := f.store.Usage(context.Background(), keys[0].ID, period); n != 2 {
		t.Errorf("usage = %d, want 2 (hits are free)", n)
	}
}

func TestCacheStoreDownRendersUncached(t *testing.T) {
	f := newCacheFixture(t, failingCache{}, 0)
	for i := 1; i <= 2; i++ {
		resp, body := f.do(t, f.q(), nil)
		if resp.StatusCode != 200 || body != "render-"+strconv.Itoa(i) {
			t.Fatalf("request %d with the store down: %d %q", i, resp.StatusCode, body)
		}
	}
}

// TestCacheCoalescingAcrossReplicas runs two servers on one cache directory
// and one Redis: a cold entry requested from both is rendered once.
func TestCacheCoalescingAcrossReplicas(t *testing.T) {
	addr, prefix := testenv.RedisAddr(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	st, err := embedded.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secret := addKey(t, st, screenshot.PlanPro, nil)
	render := &countingRenderer{gate: make(chan struct{})}
	var servers []*httptest.Server
	for range 2 {
		cache, _ := embedded.OpenCache(filepath.Join(dir, "cache"), log)
		lock, err := redisstore.New(redisstore.Config{Addr: addr, Prefix: prefix}, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		srv := httptest.NewServer(New(Deps{
			Parser: screenshot.NewParser(screenshot.DefaultLimits), Keys: st, Guard: &netguard.Guard{},
			Queue: queue.New(4, 50, 5*time.Second), Renderer: render, Quota: st, Plans: screenshot.DefaultPlans,
			HoldTTL: 10 * time.Second, Cache: cache, Lock: lock,
		}, log))
		defer srv.Close()
		servers = append(servers, srv)
	}
	q := url.Values{"api_key": {secret}, "url": {"http://8.8.8.8/"}, "is_cached": {"true"}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := range 6 {
		srv := servers[i%2]
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/v1/screenshots/take?" + q.Encode())
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			outcomes[resp.Header.Get("X-Cache")+" "+string(b)]++
			mu.Unlock()
		})
	}
	time.Sleep(400 * time.Millisecond)
	close(render.gate)
	wg.Wait()
	if n := render.count(); n != 1 {
		t.Errorf("renders = %d across two replicas, want 1 (%v)", n, outcomes)
	}
	if outcomes["MISS render-1"]+outcomes["HIT render-1"] != 6 {
		t.Errorf("outcomes = %v", outcomes)
	}
}

// TestCacheHitRechecksThePolicy: an image rendered while its target was
// allowed is not served once the policy refuses the target.
func TestCacheHitRechecksThePolicy(t *testing.T) {
	guard := &netguard.Guard{AllowNets: []netip.Prefix{netip.MustParsePrefix("10.1.2.0/24")}}
	f := newCacheFixtureGuard(t, nil, 0, guard)
	q := f.q("url", "http://10.1.2.3/intranet")
	if resp, body := f.do(t, q, nil); resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "MISS" {
		t.Fatalf("allowed: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.do(t, q, nil); resp.Header.Get("X-Cache") != "HIT" {
		t.Fatalf("second request: %v", resp.Header)
	}
	guard.AllowNets = nil
	resp, body := f.do(t, q, nil)
	if resp.StatusCode != 400 || !strings.Contains(body, "not a public address") {
		t.Errorf("after the allow-list changed: %d %s", resp.StatusCode, body)
	}
	if f.render.count() != 1 {
		t.Errorf("renders = %d", f.render.count())
	}
}

// TestTruncatedHeader: a cut full-page capture says so, fresh and from the
// cache; a whole one says nothing.
func TestTruncatedHeader(t *testing.T) {
	f := newCacheFixture(t, nil, 0)
	for _, want := range []string{"MISS", "HIT"} {
		resp, body := f.do(t, f.q("full_page", "true", "full_page_max_height", "1000"), nil)
		if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want || resp.Header.Get("X-Screenshot-Truncated") != "true" {
			t.Errorf("%s: %d %v %s", want, resp.StatusCode, resp.Header, body)
		}
	}
	resp, _ := f.do(t, f.q("full_page", "true"), nil)
	if _, ok := resp.Header["X-Screenshot-Truncated"]; ok || resp.StatusCode != 200 {
		t.Errorf("whole page: %d %v", resp.StatusCode, resp.Header)
	}
}
