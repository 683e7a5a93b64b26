package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/config"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

// greenSite serves a green page and counts the loads of "/"; it closes
// when the test ends.
func greenSite(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	pages := &atomic.Int64{}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			pages.Add(1)
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<body style="background:#0f0">ok</body>`)
	}))
	t.Cleanup(site.Close)
	return site, pages
}

// burst sends n concurrent screenshot requests spread over the servers and
// counts the statuses.
func burst(t *testing.T, servers []*Main, q url.Values, n int) map[int]int {
	return burstBy(t, servers, q, n, func(r *http.Response) int { return r.StatusCode })
}

// burstBy sends n concurrent screenshot requests spread over the servers and
// counts the answers by what of returns.
func burstBy[K comparable](t *testing.T, servers []*Main, q url.Values, n int, of func(*http.Response) K) map[K]int {
	t.Helper()
	var mu sync.Mutex
	out := map[K]int{}
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: time.Minute}
	for i := range n {
		m := servers[i%len(servers)]
		wg.Go(func() {
			resp, err := client.Get("http://" + m.Addr + "/v1/screenshots/take?" + q.Encode())
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			out[of(resp)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// TestProductionBackends runs three servers on one PostgreSQL and one Redis,
// as three replicas would, against real pages.
func TestProductionBackends(t *testing.T) {
	chrome := testenv.Chrome(t)
	pg := testenv.NewPostgres(t)
	rd := testenv.NewRedis(t)
	site, pages := greenSite(t)

	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATABASE_URL": pg.DSN("postgres"), "REDIS_URL": "redis://" + rd.Addr(),
		"CHROME_PATH": chrome, "ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error", "NODE_ENV": "production", "AUTH_SECRET": strings.Repeat("a", 40),
		"KEY_CACHE_TTL_MS": "200", "DATA_DIR": t.TempDir(),
		// 50 renders on three local browsers may queue for long on a busy
		// 2-core machine; the test counts quota, not queue time-outs.
		"QUEUE_TIMEOUT_MS": "60000"}
	if out := cli(t, env, "migrate"); !strings.Contains(out, "postgres database is up to date") {
		t.Fatalf("migrate: %s", out)
	}
	quotaKey := newKey(t, env, "--plan", "free", "--monthly-quota", "50", "--rate-limit", "1000")
	if !strings.HasPrefix(quotaKey, "ss_live_") {
		t.Fatalf("production key = %q", quotaKey)
	}
	rateKey := newKey(t, env, "--plan", "enterprise", "--rate-limit", "50", "--domains", "allowed.example")
	var cacheKey struct{ ID, Key string }
	if err := json.Unmarshal([]byte(cli(t, env, "keys", "create", "--plan", "enterprise", "--rate-limit", "1000", "--json")), &cacheKey); err != nil || cacheKey.ID == "" {
		t.Fatalf("keys create --json: %v %+v", err, cacheKey)
	}

	servers := []*Main{startMain(t, env), startMain(t, env), startMain(t, env)}
	parent := t

	t.Run("quota exact across replicas", func(t *testing.T) {
		codes := burst(t, servers, url.Values{"api_key": {quotaKey}, "url": {site.URL}}, 200)
		if codes[200] != 50 || codes[403] != 150 {
			t.Errorf("statuses = %v, want 50×200 and 150×403", codes)
		}
		if n := pages.Load(); n != 50 {
			t.Errorf("the page server rendered %d times, want 50", n)
		}
	})
	t.Run("rate window exact across replicas", func(t *testing.T) {
		// Allowed requests stop at the domain check, so nothing renders.
		codes := burst(t, servers, url.Values{"api_key": {rateKey}, "url": {site.URL}}, 200)
		if codes[429] != 150 || codes[403] != 50 {
			t.Errorf("statuses = %v, want 150×429 and 50×403", codes)
		}
	})
	var cacheOutcomes map[string]int
	t.Run("cache fill across replicas", func(t *testing.T) {
		cacheOutcomes = burstBy(t, servers, url.Values{"api_key": {cacheKey.Key}, "url": {site.URL + "/?cached"}, "is_cached": {"true"}}, 200,
			func(r *http.Response) string { return r.Header.Get("X-Cache") })
		if cacheOutcomes["MISS"]+cacheOutcomes["HIT"] != 200 || cacheOutcomes["HIT"] == 0 {
			t.Errorf("X-Cache of 200 cached requests: %v", cacheOutcomes)
		}
	})
	t.Run("usage survives a restart", func(t *testing.T) {
		for _, m := range servers {
			m.Close()
		}
		// The usage history of the 600 requests, by outcome, after a clean
		// shutdown of every replica.
		counters := usageToday(t, env)
		for _, c := range []struct {
			key  string
			want string
		}{
			{quotaKey, "succeeded 50 failed 0 hits 0 refused 150"},
			{rateKey, "succeeded 0 failed 0 hits 0 refused 150"}, // the 50 others: a domain refusal, logged only
			{cacheKey.Key, fmt.Sprintf("succeeded %d failed 0 hits %d refused 0", cacheOutcomes["MISS"], cacheOutcomes["HIT"])},
		} {
			if got := counters[screenshot.HashSecret(c.key)]; got != c.want {
				t.Errorf("usage of %.12s…: %q, want %q", c.key, got, c.want)
			}
		}
		list := cli(t, env, "keys", "list")
		if !strings.Contains(list, "50/50") {
			t.Errorf("keys list after stopping every server:\n%s", list)
		}
		servers = []*Main{startMain(parent, env)} // outlives this subtest
		resp, body := take(t, servers[0], url.Values{"api_key": {quotaKey}, "url": {site.URL}})
		if resp.StatusCode != 403 || !strings.Contains(string(body), "exhausted") {
			t.Errorf("after restart: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("redis outage falls back", func(t *testing.T) {
		key := newKey(t, env, "--plan", "pro")
		rd.Stop()
		resp, body := take(t, servers[0], url.Values{"api_key": {key}, "url": {site.URL}})
		if resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Limit") != "60" {
			t.Errorf("with Redis down: %d %s", resp.StatusCode, body)
		}
		health := get(t, "http://"+servers[0].Addr+"/health")
		if !strings.Contains(health, `"status":"degraded"`) || !strings.Contains(health, `"name":"redis","status":"fail"`) {
			t.Errorf("health with Redis down: %s", health)
		}
		strictHealth(t, health)
		if err := rd.Start(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("postgres outage is a 503, then service resumes", func(t *testing.T) {
		key := newKey(t, env, "--plan", "pro")
		pg.Stop()
		start := time.Now()
		resp, body := take(t, servers[0], url.Values{"api_key": {key}, "url": {site.URL}})
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("with PostgreSQL down: %d %s", resp.StatusCode, body)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the refusal took %s", d)
		}
		if ready := getStatus(t, "http://"+servers[0].Addr+"/health/ready"); ready != 503 {
			t.Errorf("ready with PostgreSQL down: %d", ready)
		}
		if err := pg.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			resp, body := take(t, servers[0], url.Values{"api_key": {key}, "url": {site.URL}})
			if resp.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no recovery: %d %s", resp.StatusCode, body)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func getStatus(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestS3Cache caches on a real S3-compatible server, and goes on uncached
// while it is down.
func TestS3Cache(t *testing.T) {
	chrome := testenv.Chrome(t)
	s3 := testenv.NewS3(t)
	site, pages := greenSite(t)
	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome,
		"ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error", "STORAGE_URL": s3.URL(), "STORAGE_BUCKET": "shots",
		"STORAGE_REGION": "us-east-1", "STORAGE_ACCESS_KEY_ID": s3.AccessKey, "STORAGE_SECRET_ACCESS_KEY": s3.SecretKey,
		"STORAGE_USE_PATH_STYLE_ENDPOINT": "true"}
	key := newKey(t, env, "--plan", "pro")
	m := startMain(t, env)
	q := url.Values{"api_key": {key}, "url": {site.URL}, "is_cached": {"true"}, "format": {"png"}}
	for i, want := range []string{"MISS", "HIT", "HIT"} {
		resp, body := take(t, m, q)
		if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want || resp.Header.Get("Content-Type") != "image/png" || len(body) == 0 {
			t.Fatalf("request %d: %d %v", i, resp.StatusCode, resp.Header)
		}
	}
	if n := pages.Load(); n != 1 {
		t.Errorf("page rendered %d times, want 1", n)
	}

	s3.Stop()
	q.Set("cache_key", "during-outage")
	resp, body := take(t, m, q)
	if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "MISS" {
		t.Errorf("with storage down: %d %s", resp.StatusCode, body)
	}
	if h := get(t, "http://"+m.Addr+"/health"); !strings.Contains(h, `"status":"degraded"`) || !strings.Contains(h, `"name":"s3","status":"fail"`) {
		t.Errorf("health with storage down: %s", h)
	}
	if err := s3.Start(); err != nil {
		t.Fatal(err)
	}
	q.Del("cache_key")
	if resp, _ := take(t, m, q); resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "HIT" {
		t.Errorf("after the storage came back: %d %v", resp.StatusCode, resp.Header)
	}

	// Wrong credentials stop start-up with a clear error.
	bad := environ{}
	for k, v := range env {
		bad[k] = v
	}
	bad["STORAGE_SECRET_ACCESS_KEY"] = "wrong"
	cfg, _ := config.Load(bad.get)
	mb := &Main{Config: cfg, Log: newLogger(cfg, io.Discard), Stderr: io.Discard}
	if err := mb.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "storage:") {
		t.Errorf("start with wrong storage credentials: %v", err)
	}
}

// TestFaultsUnderLoad stops and restarts PostgreSQL, Redis and the S3
// server while clients keep requesting: every answer is an image or a 503,
// none hangs, and the usage counted equals the renders served.
func TestFaultsUnderLoad(t *testing.T) {
	chrome := testenv.Chrome(t)
	pg := testenv.NewPostgres(t)
	rd := testenv.NewRedis(t)
	s3 := testenv.NewS3(t)
	site, _ := greenSite(t)
	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATABASE_URL": pg.DSN("postgres"), "REDIS_URL": "redis://" + rd.Addr(),
		"STORAGE_URL": s3.URL(), "STORAGE_BUCKET": "load", "STORAGE_REGION": "us-east-1", "STORAGE_ACCESS_KEY_ID": s3.AccessKey,
		"STORAGE_SECRET_ACCESS_KEY": s3.SecretKey, "STORAGE_USE_PATH_STYLE_ENDPOINT": "true",
		"CHROME_PATH": chrome, "ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error", "KEY_CACHE_TTL_MS": "500", "DATA_DIR": t.TempDir()}
	key := newKey(t, env, "--plan", "enterprise", "--rate-limit", "100000", "--monthly-quota", "100000")
	m := startMain(t, env)

	stop := make(chan struct{})
	var mu sync.Mutex
	statuses := map[int]int{}
	renders := 0
	var slowest time.Duration
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 60 * time.Second}
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := url.Values{"api_key": {key}, "url": {site.URL}, "width": {"400"}, "height": {"300"}}
				if i%2 == 0 {
					q.Set("is_cached", "true")
					q.Set("cache_key", fmt.Sprint(w, "-", i%6))
				}
				start := time.Now()
				resp, err := client.Get("http://" + m.Addr + "/v1/screenshots/take?" + q.Encode())
				d := time.Since(start)
				if err != nil {
					t.Errorf("request failed: %v", err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				if resp.StatusCode == 200 && resp.Header.Get("X-Cache") != "HIT" {
					renders++
				}
				slowest = max(slowest, d)
				mu.Unlock()
				if resp.StatusCode == 503 {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	step := func(d time.Duration, f func()) { time.Sleep(d); f() }
	step(time.Second, pg.Stop)
	step(1500*time.Millisecond, func() {
		if err := pg.Start(); err != nil {
			t.Error(err)
		}
	})
	step(time.Second, rd.Stop)
	step(time.Second, func() {
		if err := rd.Start(); err != nil {
			t.Error(err)
		}
	})
	step(time.Second, s3.Stop)
	step(time.Second, func() {
		if err := s3.Start(); err != nil {
			t.Error(err)
		}
	})
	step(1500*time.Millisecond, func() { close(stop) })
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("statuses %v, renders %d, slowest %s", statuses, renders, slowest)
	for code := range statuses {
		if code != 200 && code != 503 {
			t.Errorf("status %d under faults: %v", code, statuses)
		}
	}
	if statuses[503] == 0 || renders == 0 {
		t.Errorf("the faults did not show (or nothing rendered): %v", statuses)
	}
	if slowest > 20*time.Second {
		t.Errorf("a request took %s", slowest)
	}
	// Every served render is counted once, also those whose commit met the
	// outage (they are retried in the background).
	want := fmt.Sprintf(" %d/100000", renders)
	deadline := time.Now().Add(30 * time.Second)
	for {
		list := cli(t, env, "keys", "list")
		if strings.Contains(list, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage does not match the %d renders served:\n%s", renders, list)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// usageToday reads today's usage counters of every key from the store, by
// the hash of the key's secret.
func usageToday(t *testing.T, env environ) map[string]string {
	t.Helper()
	cfg, err := config.Load(env.get)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := openStore(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, err := st.ListKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	out := map[string]string{}
	for _, k := range keys {
		days, err := st.UsageDays(t.Context(), k.ID, today, today)
		if err != nil {
			t.Fatal(err)
		}
		var d account.Day
		if len(days) == 1 {
			d = days[0]
		}
		out[k.Hash] = fmt.Sprintf("succeeded %d failed %d hits %d refused %d", d.Succeeded, d.Failed, d.CacheHits, d.Refused)
	}
	return out
}
