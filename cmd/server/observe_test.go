package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/shutterhq/shutter/internal/testenv"
)

func TestMain(m *testing.M) {
	// The graceful-shutdown test runs this binary as the real server.
	if os.Getenv("SHUTTER_TEST_MAIN") == "1" {
		os.Args = []string{"server", "serve"}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newKey creates a key with the CLI and returns the secret.
func newKey(t testing.TB, env environ, args ...string) string {
	t.Helper()
	out := strings.TrimSpace(cli(t, env, append([]string{"keys", "create"}, args...)...))
	return out[strings.LastIndex(out, "\n")+1:]
}

// TestResponsesMatchOpenAPI validates real responses of the running server,
// one of each class, against the document the server serves.
func TestResponsesMatchOpenAPI(t *testing.T) {
	chrome := testenv.Chrome(t)
	release := make(chan struct{})
	defer close(release)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow.png" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/slow" {
			io.WriteString(w, `<img src="/slow.png">`)
			return
		}
		io.WriteString(w, `<body style="background:#0f0"><p id="x">x</p></body>`)
	}))
	defer site.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	env := environ{"PORT": "0", "METRICS_PORT": "0", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome,
		"ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error", "MAX_PAGE_LOAD_TIMEOUT": "1000",
		"MAX_CONCURRENT_SCREENSHOTS": "1", "MAX_QUEUED_SCREENSHOTS": "0",
		// A day-long window: a minute boundary between the two requests of
		// the limited key would let both through.
		"RATE_LIMIT_WINDOW_MS": "86400000"}
	secret := newKey(t, env, "--plan", "pro")
	limited := newKey(t, env, "--plan", "pro", "--rate-limit", "1")
	m := startMain(t, env)
	base := "http://" + m.Addr

	resp, err := http.Get(base + "/openapi")
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}

	take := func(kv ...string) string {
		q := url.Values{"api_key": {secret}, "url": {site.URL}}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return "/v1/screenshots/take?" + q.Encode()
	}
	var etag string
	for _, tc := range []struct {
		path   string
		status int
	}{
		{take(), 200},
		{take("is_cached", "true"), 200},
		{take("is_cached", "true"), 304}, // with If-None-Match
		{take("api_key", limited), 200},
		{take("api_key", limited), 429},
		{take("format", "png"), 200},
		{take("format", "webp", "selector", "#x"), 200},
		{take("width", "1"), 400},
		{take("api_key", "ss_test_wrong"), 403},
		{take("selector", "#none"), 422},
		{take("url", closedURL), 502},
		{take("url", site.URL+"/slow"), 504},
		{"/health", 200},
		{"/health/ready", 200},
		{"/health/live", 200},
	} {
		req, _ := http.NewRequest(http.MethodGet, base+tc.path, nil)
		if tc.status == 304 {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d: %.200s", tc.path, resp.StatusCode, tc.status, body)
			continue
		}
		if resp.Header.Get("ETag") != "" {
			etag = resp.Header.Get("ETag")
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		vreq, _ := http.NewRequest(http.MethodGet, tc.path, nil)
		if ok, errs := v.ValidateHttpResponse(vreq, resp); !ok {
			for _, e := range errs {
				t.Errorf("%s (%d): %s: %s", tc.path, tc.status, e.Message, e.Reason)
			}
		}
	}

	// 503: the only slot is busy and nobody may wait.
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		if resp, err := http.Get(base + take("url", site.URL+"/slow")); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(get(t, base+"/health"), `"active":1`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	req503, _ := http.NewRequest(http.MethodGet, base+take(), nil)
	resp, err = http.DefaultClient.Do(req503)
	if err != nil {
		t.Fatal(err)
	}
	body503, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("busy: %d %s", resp.StatusCode, body503)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body503))
	vreq, _ := http.NewRequest(http.MethodGet, take(), nil)
	if ok, errs := v.ValidateHttpResponse(vreq, resp); !ok {
		for _, e := range errs {
			t.Errorf("503: %s: %s", e.Message, e.Reason)
		}
	}
	<-busy

	// The health report in the embedded default.
	resp, err = http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Status string
		Checks []struct {
			Name, Status string
			Duration     float64
			Details      map[string]any
		}
		Version string
	}
	json.NewDecoder(resp.Body).Decode(&rep)
	resp.Body.Close()
	names := []string{}
	for _, c := range rep.Checks {
		names = append(names, c.Name)
		if c.Status != "pass" {
			t.Errorf("check %s = %s", c.Name, c.Status)
		}
		if c.Name == "queue" {
			for _, k := range []string{"waiting", "active", "completed", "failed", "workerRunning"} {
				if _, ok := c.Details[k]; !ok {
					t.Errorf("queue details lack %s: %v", k, c.Details)
				}
			}
			if c.Details["completed"].(float64) < 3 || c.Details["workerRunning"] != true {
				t.Errorf("queue details = %v", c.Details)
			}
		}
	}
	if rep.Status != "healthy" || strings.Join(names, ",") != "database,storage,queue,s3,browser,consent" || rep.Version == "" {
		t.Errorf("health = %+v", rep)
	}

	// Metrics on their own port.
	resp, err = http.Get("http://" + m.MetricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`shutter_http_requests_total{route="/v1/screenshots/take",status="200"} 5`,
		`shutter_http_requests_total{route="/v1/screenshots/take",status="422"} 1`,
		`shutter_http_requests_total{route="/v1/screenshots/take",status="429"} 1`,
		`shutter_render_duration_seconds_count{format="jpeg"} 3`,
		`shutter_renders_completed_total 5`,
		`shutter_render_phase_seconds_count{phase="capture"} 5`,
		`shutter_refusals_total{reason="rate_limit"} 1`,
		`shutter_refusals_total{reason="queue_full"} 1`,
		`shutter_cache_requests_total{result="hit"} 1`,
		`shutter_queue_slots 1`,
		`shutter_browsers_ready 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if resp, err := http.Get(base + "/metrics"); err == nil {
		if resp.StatusCode != 404 {
			t.Errorf("/metrics on the public port: %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// TestGracefulShutdown sends SIGTERM to a real server process with a render
// in flight.
func TestGracefulShutdown(t *testing.T) {
	chrome := testenv.Chrome(t)
	var arrived atomic.Bool
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Store(true)
		time.Sleep(1500 * time.Millisecond)
		io.WriteString(w, `<body style="background:#00f">slow</body>`)
	}))
	defer site.Close()

	port := freePort(t)
	env := environ{"PORT": port, "METRICS_PORT": "-1", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome,
		"ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "info", "SHUTDOWN_DELAY_MS": "800", "SHUTDOWN_GRACE_MS": "10000"}
	secret := newKey(t, env, "--plan", "pro")

	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{"SHUTTER_TEST_MAIN=1", "HOME=" + os.Getenv("HOME"), "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()

	base := "http://127.0.0.1:" + port
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(base + "/health/live"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	type result struct {
		status int
		ctype  string
		err    error
	}
	inflight := make(chan result, 1)
	go func() {
		q := url.Values{"api_key": {secret}, "url": {site.URL}}
		resp, err := http.Get(base + "/v1/screenshots/take?" + q.Encode())
		if err != nil {
			inflight <- result{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		inflight <- result{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type")}
	}()
	for !arrived.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	// Readiness fails first, while the server still answers.
	resp, err := http.Get(base + "/health/ready")
	if err != nil {
		t.Fatalf("ready during the drain: %v\n%s", err, logs.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "shutting down") {
		t.Errorf("ready during the drain: %d %s", resp.StatusCode, body)
	}

	r := <-inflight
	if r.err != nil || r.status != 200 || r.ctype != "image/jpeg" {
		t.Errorf("in-flight render: %+v", r)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not exit after SIGTERM:\n%s", logs.String())
	}
	if _, err := http.Get(base + "/health/live"); err == nil {
		t.Error("server still answers after exit")
	}
}
