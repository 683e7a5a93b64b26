package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/queue"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

// fakeRenderer is enough for the HTTP layer: the real one is tested against
// a real browser in package chromium and end to end in cmd/server.
type fakeRenderer struct {
	calls atomic.Int64
	err   error
	block chan struct{}
	panic bool
}

func (f *fakeRenderer) Render(ctx context.Context, o *screenshot.Options) (*screenshot.Image, error) {
	f.calls.Add(1)
	if f.panic {
		panic("boom")
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return &screenshot.Image{Data: []byte("image-bytes"), Format: o.Format}, nil
}

type fixture struct {
	srv    *httptest.Server
	render *fakeRenderer
	secret string
	store  *embedded.Store
	queue  *queue.Queue
}

func newFixture(t *testing.T, slots, waiting int) *fixture {
	t.Helper()
	st, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	secret := screenshot.NewSecret("ss", "development")
	k := &screenshot.Key{ID: screenshot.NewKeyID(), Hash: screenshot.HashSecret(secret), Plan: screenshot.PlanPro, CreatedAt: time.Now()}
	if err := st.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	f := &fixture{render: &fakeRenderer{}, secret: secret, store: st, queue: queue.New(slots, waiting, 200*time.Millisecond)}
	s := New(Deps{
		Parser:   screenshot.NewParser(screenshot.DefaultLimits),
		Keys:     st,
		Guard:    &netguard.Guard{AllowPrivate: false},
		Queue:    f.queue,
		Renderer: f.render,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.srv = httptest.NewServer(s)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) get(t *testing.T, path string, q url.Values) (*http.Response, []byte) {
	t.Helper()
	u := f.srv.URL + path
	if q != nil {
		u += "?" + q.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func (f *fixture) query(kv ...string) url.Values {
	q := url.Values{"api_key": {f.secret}, "url": {"http://8.8.8.8/"}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
			continue
		}
		q.Set(kv[i], kv[i+1])
	}
	return q
}

// errorBody checks the error object and returns its message.
func errorBody(t *testing.T, resp *http.Response, body []byte, status int) string {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d (body %s)", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var e map[string]string
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("body is not JSON: %s", body)
	}
	if len(e) != 2 || e["error"] == "" || e["requestId"] == "" {
		t.Errorf("error object = %v, want exactly error and requestId", e)
	}
	if e["requestId"] != resp.Header.Get("X-Request-Id") {
		t.Errorf("requestId %q != X-Request-Id %q", e["requestId"], resp.Header.Get("X-Request-Id"))
	}
	return e["error"]
}

func TestSuccessHeaders(t *testing.T) {
	f := newFixture(t, 2, 2)
	for format, ct := range map[string]string{"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp"} {
		resp, body := f.get(t, "/v1/screenshots/take", f.query("format", format))
		if resp.StatusCode != 200 || string(body) != "image-bytes" {
			t.Fatalf("%s: %d %s", format, resp.StatusCode, body)
		}
		h := resp.Header
		if h.Get("Content-Type") != ct || h.Get("Content-Length") != "11" || h.Get("Cache-Control") != "public, max-age=3600" || len(h.Get("X-Request-Id")) < 16 {
			t.Errorf("%s headers: %v", format, h)
		}
	}
}

func TestClientErrors(t *testing.T) {
	f := newFixture(t, 2, 2)
	for _, tc := range []struct {
		name   string
		q      url.Values
		status int
		msg    string
	}{
		{"bad width", f.query("width", "5"), 400, "width must be an integer from 100 to 3840"},
		{"unknown", f.query("colour", "red"), 400, `unknown parameter "colour"`},
		{"missing key", f.query("api_key", ""), 400, "api_key is required"},
		{"wrong key", f.query("api_key", "ss_test_nope"), 403, "invalid API key"},
		{"private", f.query("url", "http://127.0.0.1:9/"), 400, "not a public address"},
		{"metadata", f.query("url", "http://169.254.169.254/latest/"), 400, "not a public address"},
		{"mapped", f.query("url", "http://[::ffff:127.0.0.1]/"), 400, "not a public address"},
		{"decimal", f.query("url", "http://2130706433/"), 400, "not a public address"},
		{"scheme", f.query("url", "FILE:///etc/passwd"), 400, "must start with http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.get(t, "/v1/screenshots/take", tc.q)
			if msg := errorBody(t, resp, body, tc.status); !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not contain %q", msg, tc.msg)
			}
		})
	}
	if n := f.render.calls.Load(); n != 0 {
		t.Errorf("renderer called %d times for refused requests", n)
	}
	// A malformed query string.
	resp, err := http.Get(f.srv.URL + "/v1/screenshots/take?url=%zz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	errorBody(t, resp, body, 400)
}

func TestRevokedKey(t *testing.T) {
	f := newFixture(t, 2, 2)
	keys, _ := f.store.ListKeys(context.Background())
	if err := f.store.RevokeKey(context.Background(), keys[0].ID); err != nil {
		t.Fatal(err)
	}
	resp, body := f.get(t, "/v1/screenshots/take", f.query())
	errorBody(t, resp, body, 403)
}

func TestRendererErrorsMapToStatuses(t *testing.T) {
	f := newFixture(t, 2, 2)
	for _, tc := range []struct {
		err    error
		status int
	}{
		{screenshot.Errorf(screenshot.EUPSTREAM, "refused"), 502},
		{screenshot.Errorf(screenshot.ETIMEOUT, "slow"), 504},
		{screenshot.Errorf(screenshot.EUNPROCESSABLE, "no element"), 422},
		{&screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "browser", RetryAfter: time.Second}, 503},
		{context.Canceled, 500},
	} {
		f.render.err = tc.err
		resp, body := f.get(t, "/v1/screenshots/take", f.query())
		msg := errorBody(t, resp, body, tc.status)
		if tc.status == 500 && msg != "internal error" {
			t.Errorf("500 leaks detail: %q", msg)
		}
		if tc.status == 503 && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("503 without Retry-After")
		}
	}
	if st := f.queue.Stats(); st.Failed != 5 || st.Active != 0 {
		t.Errorf("queue stats = %+v", st)
	}
}

func TestQueueFull(t *testing.T) {
	f := newFixture(t, 1, 0)
	f.render.block = make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Get(f.srv.URL + "/v1/screenshots/take?" + f.query().Encode()); err == nil {
			resp.Body.Close()
		}
	}()
	for f.queue.Stats().Active == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	resp, body := f.get(t, "/v1/screenshots/take", f.query())
	errorBody(t, resp, body, 503)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After on 503")
	}
	close(f.render.block)
	<-done
}

func TestQueueWaitTimesOut(t *testing.T) {
	f := newFixture(t, 1, 5)
	f.render.block = make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Get(f.srv.URL + "/v1/screenshots/take?" + f.query().Encode()); err == nil {
			resp.Body.Close()
		}
	}()
	defer func() { close(f.render.block); <-done }()
	for f.queue.Stats().Active == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	resp, body := f.get(t, "/v1/screenshots/take", f.query())
	errorBody(t, resp, body, 503)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("queued request waited %s", d)
	}
}

func TestNotFoundAndMethod(t *testing.T) {
	f := newFixture(t, 1, 1)
	resp, body := f.get(t, "/v2/nothing", nil)
	errorBody(t, resp, body, 404)
	resp2, err := http.Post(f.srv.URL+"/v1/screenshots/take", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	errorBody(t, resp2, b2, 405)
}

func TestPanicBecomes500(t *testing.T) {
	f := newFixture(t, 1, 1)
	f.render.panic = true
	resp, body := f.get(t, "/v1/screenshots/take", f.query())
	if msg := errorBody(t, resp, body, 500); msg != "internal error" {
		t.Errorf("message = %q", msg)
	}
	// The server goes on serving.
	f.render.panic = false
	if resp, _ := f.get(t, "/v1/screenshots/take", f.query()); resp.StatusCode != 200 {
		t.Errorf("after a panic: %d", resp.StatusCode)
	}
}

func TestLive(t *testing.T) {
	f := newFixture(t, 1, 1)
	resp, body := f.get(t, "/health/live", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"alive"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestLogsNeverCarryTheKey(t *testing.T) {
	f := newFixture(t, 1, 1)
	var buf bytes.Buffer
	var mu sync.Mutex
	s := New(Deps{
		Parser: screenshot.NewParser(screenshot.DefaultLimits), Keys: f.store, Guard: &netguard.Guard{},
		Queue: queue.New(1, 1, time.Second), Renderer: f.render,
	}, slog.New(slog.NewJSONHandler(lockedWriter{&buf, &mu}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	srv := httptest.NewServer(s)
	defer srv.Close()
	q := f.query("bypass_csp", "true", "cookies", "sid=cookie-secret-value")
	resp, err := http.Get(srv.URL + "/v1/screenshots/take?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	mu.Lock()
	logs := buf.String()
	mu.Unlock()
	if strings.Contains(logs, f.secret) || strings.Contains(logs, "cookie-secret-value") {
		t.Fatalf("logs carry a secret:\n%s", logs)
	}
	var sawAccess, sawCSP bool
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		switch e["msg"] {
		case "request":
			sawAccess = e["request_id"] == id && e["status"] == float64(200) && strings.HasPrefix(e["key_id"].(string), "key_")
		case "bypass_csp used":
			sawCSP = e["level"] == "WARN" && e["request_id"] == id && e["target_host"] == "8.8.8.8" && strings.HasPrefix(e["key_id"].(string), "key_")
		}
	}
	if !sawAccess || !sawCSP {
		t.Errorf("access line %v, bypass_csp warning %v:\n%s", sawAccess, sawCSP, logs)
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// limitedFixture is a fixture with the embedded limiter and quota store.
func limitedFixture(t *testing.T, plans screenshot.Plans, window time.Duration) *fixture {
	t.Helper()
	st, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{render: &fakeRenderer{}, store: st, queue: queue.New(4, 100, time.Second)}
	f.secret = addKey(t, st, screenshot.PlanFree, nil)
	s := New(Deps{
		Parser: screenshot.NewParser(screenshot.DefaultLimits), Keys: st, Guard: &netguard.Guard{},
		Queue: f.queue, Renderer: f.render, Limiter: embedded.NewLimiter(), Quota: st, Plans: plans,
		RateWindow: window, HoldTTL: time.Minute,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.srv = httptest.NewServer(s)
	t.Cleanup(f.srv.Close)
	return f
}

func addKey(t testing.TB, st screenshot.KeyStore, plan screenshot.Plan, domains []string) string {
	t.Helper()
	secret := screenshot.NewSecret("ss", "development")
	k := &screenshot.Key{ID: screenshot.NewKeyID(), Hash: screenshot.HashSecret(secret), Plan: plan, Domains: domains, CreatedAt: time.Now()}
	if err := st.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return secret
}

func TestRateLimitHeadersAnd429(t *testing.T) {
	f := limitedFixture(t, screenshot.Plans{Free: screenshot.PlanLimits{Rate: 3, Quota: 100}}, time.Minute)
	var last *http.Response
	for i := 1; i <= 3; i++ {
		resp, _ := f.get(t, "/v1/screenshots/take", f.query())
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		if resp.Header.Get("X-RateLimit-Limit") != "3" || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(3-i) {
			t.Errorf("request %d headers: %v", i, resp.Header)
		}
		last = resp
	}
	reset, _ := strconv.ParseInt(last.Header.Get("X-RateLimit-Reset"), 10, 64)
	if d := time.Until(time.Unix(reset, 0)); d <= 0 || d > time.Minute {
		t.Errorf("X-RateLimit-Reset %d is not the end of the window", reset)
	}
	// Errors carry the headers too once the key is known.
	resp, body := f.get(t, "/v1/screenshots/take", f.query())
	msg := errorBody(t, resp, body, 429)
	if !strings.Contains(msg, "rate limit of 3 requests") || resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("429: %q %v", msg, resp.Header)
	}
	if n := f.render.calls.Load(); n != 3 {
		t.Errorf("renders = %d, want 3", n)
	}
}

func TestQuotaExhausted(t *testing.T) {
	f := limitedFixture(t, screenshot.Plans{Free: screenshot.PlanLimits{Rate: 100, Quota: 2}}, time.Minute)
	for i := range 2 {
		if resp, _ := f.get(t, "/v1/screenshots/take", f.query()); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	resp, body := f.get(t, "/v1/screenshots/take", f.query())
	msg := errorBody(t, resp, body, 403)
	_, resets := screenshot.PeriodOf(time.Now())
	if !strings.Contains(msg, "monthly quota of 2 screenshots is exhausted") || !strings.Contains(msg, resets.Format(time.RFC3339)) {
		t.Errorf("message = %q", msg)
	}
	if resp.Header.Get("X-RateLimit-Limit") == "" {
		t.Error("quota refusal without rate-limit headers")
	}
}

func TestFailuresDoNotCountAgainstQuota(t *testing.T) {
	f := limitedFixture(t, screenshot.Plans{Free: screenshot.PlanLimits{Rate: 100, Quota: 1}}, time.Minute)
	f.render.err = screenshot.Errorf(screenshot.EUPSTREAM, "refused")
	for range 3 {
		resp, body := f.get(t, "/v1/screenshots/take", f.query())
		errorBody(t, resp, body, 502)
	}
	f.render.err = nil
	if resp, body := f.get(t, "/v1/screenshots/take", f.query()); resp.StatusCode != 200 {
		t.Fatalf("first success after failures: %d %s", resp.StatusCode, body)
	}
	keys, _ := f.store.ListKeys(context.Background())
	period, _ := screenshot.PeriodOf(time.Now())
	if n, _ := f.store.Usage(context.Background(), keys[0].ID, period); n != 1 {
		t.Errorf("usage = %d, want 1", n)
	}
}

func TestDomainWhitelist(t *testing.T) {
	f := limitedFixture(t, screenshot.DefaultPlans, time.Minute)
	f.secret = addKey(t, f.store, screenshot.PlanPro, []string{"8.8.8.8", "*.example.org"})
	for _, tc := range []struct {
		url  string
		want int
	}{
		{"http://8.8.8.8/", 200},
		{"http://8.8.4.4/", 403},
		{"http://example.org/", 403}, // the wildcard does not cover the apex
	} {
		resp, body := f.get(t, "/v1/screenshots/take", f.query("url", tc.url))
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s", tc.url, resp.StatusCode, body)
		}
		if tc.want == 403 && !strings.Contains(string(body), "may not capture") {
			t.Errorf("%s: %s", tc.url, body)
		}
	}
	if n := f.render.calls.Load(); n != 1 {
		t.Errorf("renders = %d, want 1", n)
	}
}

func TestConcurrentQuotaExactness(t *testing.T) {
	f := limitedFixture(t, screenshot.Plans{Free: screenshot.PlanLimits{Rate: 1000, Quota: 50}}, time.Minute)
	codes := statusCounts(t, f.srv.URL, f.query(), 200)
	if codes[200] != 50 || codes[403] != 150 || f.render.calls.Load() != 50 {
		t.Errorf("statuses %v, renders %d; want 50×200, 150×403, 50 renders", codes, f.render.calls.Load())
	}
}

// statusCounts sends n concurrent requests and counts the statuses.
func statusCounts(t *testing.T, base string, q url.Values, n int) map[int]int {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for range n {
		wg.Go(func() {
			resp, err := client.Get(base + "/v1/screenshots/take?" + q.Encode())
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return codes
}

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopShared()
	os.Exit(code)
}

// TestEveryErrorCodeHasAStatus walks the codes: each maps to its status,
// and a code missing from the table is a 500 with the request id, never a
// zero status.
func TestEveryErrorCodeHasAStatus(t *testing.T) {
	s := New(Deps{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for code, want := range map[screenshot.Code]int{
		screenshot.EINVALID: 400, screenshot.EUNAUTHORIZED: 403, screenshot.EFORBIDDEN: 403, screenshot.ENOTFOUND: 404,
		screenshot.EUNPROCESSABLE: 422, screenshot.ERATELIMIT: 429, screenshot.EUPSTREAM: 502, screenshot.EUNAVAILABLE: 503,
		screenshot.ETIMEOUT: 504, screenshot.EINTERNAL: 500, screenshot.EUNAUTHENTICATED: 401, screenshot.ECONFLICT: 409,
		screenshot.ETOOLARGE: 413, screenshot.Code("not-in-the-table"): 500,
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/v1/screenshots/take", nil)
		r = r.WithContext(screenshot.WithRequestID(r.Context(), "req-1"))
		s.writeError(w, r, screenshot.Errorf(code, "m"))
		if w.Code != want {
			t.Errorf("%s: status %d, want %d", code, w.Code, want)
		}
		var body ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error == "" || body.RequestID != "req-1" {
			t.Errorf("%s: body %s", code, w.Body)
		}
	}
	if len(statusOf) != 13 {
		t.Errorf("the table has %d codes; add the new one here", len(statusOf))
	}
}
