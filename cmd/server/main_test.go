package main

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/config"
	"github.com/shutterhq/shutter/internal/testenv"
)

// environ is a test environment of settings.
type environ map[string]string

func (e environ) get(k string) string { return e[k] }

func cli(t testing.TB, env environ, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, env.get, strings.NewReader(env["STDIN"]), &out, &errb); err != nil {
		t.Fatalf("server %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

func startMain(t testing.TB, env environ) *Main {
	t.Helper()
	cfg, err := config.Load(env.get)
	if err != nil {
		t.Fatal(err)
	}
	m := &Main{Config: cfg, Log: newLogger(cfg, io.Discard), Stderr: io.Discard}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func take(t *testing.T, m *Main, q url.Values) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr + "/v1/screenshots/take?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func TestEndToEnd(t *testing.T) {
	chrome := testenv.Chrome(t)
	var hits atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, `<body style="margin:0;background:#0000ff">hello</body>`)
	}))
	defer site.Close()

	env := environ{"PORT": "0", "METRICS_PORT": "0", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome, "ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error"}

	// Keys are made by the CLI; the secret is the last line.
	out := cli(t, env, "keys", "create", "--plan", "pro", "--name", "e2e", "--domains", "127.0.0.1,*.Example.org")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	secret := lines[len(lines)-1]
	if !strings.HasPrefix(secret, "ss_test_") || len(secret) < len("ss_test_")+26 {
		t.Fatalf("secret = %q", secret)
	}
	list := cli(t, env, "keys", "list")
	if strings.Contains(list, secret) || !strings.Contains(list, "e2e") || !strings.Contains(list, "127.0.0.1,*.example.org") {
		t.Fatalf("keys list:\n%s", list)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]

	m := startMain(t, env)
	q := url.Values{"api_key": {secret}, "url": {site.URL}, "width": {"640"}, "height": {"480"}}
	resp, body := take(t, m, q)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Content-Type") != "image/jpeg" || resp.Header.Get("Cache-Control") != "public, max-age=3600" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("headers = %v", resp.Header)
	}
	img, _, err := image.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds() != image.Rect(0, 0, 640, 480) {
		t.Errorf("bounds = %v", img.Bounds())
	}
	if r, g, b, _ := img.At(600, 400).RGBA(); r>>8 > 30 || g>>8 > 30 || b>>8 < 220 {
		t.Errorf("pixel = %v, want the page's blue", img.At(600, 400))
	}

	// Readiness reflects the store and the browser.
	rr, err := http.Get("http://" + m.Addr + "/health/ready")
	if err != nil || rr.StatusCode != 200 {
		t.Fatalf("ready: %v %v", rr, err)
	}
	rr.Body.Close()

	// Revoking from the CLI while the server runs stops the key within
	// KEY_CACHE_TTL_MS (5 s).
	cli(t, env, "keys", "revoke", id)
	revoked := time.Now()
	for {
		// Outside the key's domains: "may not capture" while the key is
		// valid, "invalid API key" once the revocation is seen.
		resp, body = take(t, m, url.Values{"api_key": {secret}, "url": {"http://elsewhere.example/"}})
		if resp.StatusCode == 403 && strings.Contains(string(body), "invalid API key") {
			break
		}
		if time.Since(revoked) > 7*time.Second {
			t.Fatalf("revoked key still works after %s: %d %s", time.Since(revoked), resp.StatusCode, body)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestPrivateTargetRefused(t *testing.T) {
	chrome := testenv.Chrome(t)
	var hits atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer site.Close()
	env := environ{"PORT": "0", "METRICS_PORT": "0", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome, "LOG_LEVEL": "error"}
	out := cli(t, env, "keys", "create", "--plan", "free")
	secret := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	secret = strings.TrimSpace(secret)
	m := startMain(t, env)
	port := site.URL[strings.LastIndex(site.URL, ":")+1:]
	for _, target := range []string{site.URL, "http://localhost:" + port, "http://2130706433:" + port, "http://[::ffff:127.0.0.1]:" + port} {
		resp, body := take(t, m, url.Values{"api_key": {secret}, "url": {target}})
		if resp.StatusCode != 400 || !strings.Contains(string(body), "not a public address") {
			t.Errorf("%s: %d %s", target, resp.StatusCode, body)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the private target received %d requests", n)
	}
}

func TestDevelopmentKeyPrintedOnce(t *testing.T) {
	chrome := testenv.Chrome(t)
	env := environ{"PORT": "0", "METRICS_PORT": "0", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome, "LOG_LEVEL": "error"}
	cfg, _ := config.Load(env.get)
	var stderr bytes.Buffer
	m := &Main{Config: cfg, Log: newLogger(cfg, io.Discard), Stderr: &stderr}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if !strings.Contains(stderr.String(), "ss_test_") {
		t.Fatalf("no development key printed: %q", stderr.String())
	}
	stderr.Reset()
	m = &Main{Config: cfg, Log: newLogger(cfg, io.Discard), Stderr: &stderr}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if strings.Contains(stderr.String(), "ss_test_") {
		t.Fatal("development key printed again")
	}
}

func TestBadSettingStopsStartup(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), nil, environ{"PORT": "abc"}.get, strings.NewReader(""), &out, &errb)
	if err == nil || err.Error() != `PORT: must be an integer from 0 to 65535, got "abc"` {
		t.Fatalf("err = %v", err)
	}
}
