package browserd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/browserauth"
	"github.com/shutterhq/shutter/internal/chromium"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

const token = "test-browser-token-0123456789abcdef"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func startSupervisor(t *testing.T, tokens ...string) (*Supervisor, string) {
	t.Helper()
	s, err := New(Config{ExecPath: testenv.Chrome(t), Tokens: tokens, Listen: "127.0.0.1:0", DrainTimeout: 10 * time.Second,
		Flags: []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--disable-quic"}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr
	waitStatus(t, base+"/readyz", 200)
	return s, base
}

func waitStatus(t *testing.T, u string, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered %d", u, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func get(t *testing.T, u string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func pool(t *testing.T, urls []string, tokens []string, wait time.Duration) (*chromium.Pool, error) {
	t.Helper()
	p, err := chromium.New(chromium.Config{URLs: urls, BrowserTokens: tokens, Timeout: 20 * time.Second}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		p.Close()
		return nil, err
	}
	t.Cleanup(func() { p.Close() })
	return p, nil
}

func page(t *testing.T) *httptest.Server {
	return testenv.HTMLServer(t, `<body style="background:#00f"></body>`)
}

func TestOnlyTokenHoldersDriveTheBrowser(t *testing.T) {
	_, base := startSupervisor(t, token)
	for name, h := range map[string]http.Header{
		"no token":    nil,
		"wrong token": {"Authorization": {"Bearer " + strings.Repeat("x", len(token))}},
		"basic":       {"Authorization": {"Basic " + token}},
	} {
		for _, path := range []string{"/json/version", "/json/list", "/devtools/browser"} {
			hh := h.Clone()
			if path == "/devtools/browser" {
				if hh == nil {
					hh = http.Header{}
				}
				hh.Set("Connection", "Upgrade")
				hh.Set("Upgrade", "websocket")
				hh.Set("Sec-WebSocket-Version", "13")
				hh.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			}
			if code, body := get(t, base+path, hh); code != http.StatusUnauthorized {
				t.Errorf("%s %s: %d %s", name, path, code, body)
			}
		}
	}
	if code, body := get(t, base+"/json/version", http.Header{"Authorization": {"Bearer " + token}}); code != 200 || !strings.Contains(body, "Browser") {
		t.Errorf("with the token: %d %s", code, body)
	}

	// The proof: only a token holder can compute it.
	nonce := browserauth.Nonce()
	_, body := get(t, base+browserauth.HelloPath+"?nonce="+nonce, nil)
	var h browserauth.Hello
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	if browserauth.Verify(h, nonce, []string{token}) != token || browserauth.Verify(h, nonce, []string{"another-token-0123456789"}) != "" {
		t.Errorf("hello = %s", body)
	}

	// The API's pool proves the supervisor, presents the token, renders.
	p, err := pool(t, []string{base}, []string{token}, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	site := page(t)
	img, err := p.Render(context.Background(), parse(t, site.URL))
	if err != nil || len(img.Data) == 0 {
		t.Fatalf("render through the supervisor: %v", err)
	}
	// A pool with another token refuses this browser.
	if _, err := pool(t, []string{base}, []string{"not-the-token-0123456789abcdef"}, 2*time.Second); err == nil {
		t.Error("a pool with the wrong token used the browser")
	}
}

// TestRogueBrowserGetsNoToken: an endpoint that copied the browser pods'
// labels but cannot prove the token receives no token and no render.
func TestRogueBrowserGetsNoToken(t *testing.T) {
	var leaked atomic.Bool
	rogue := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Authorization"), token) || strings.Contains(r.URL.RawQuery, token) {
			leaked.Store(true)
		}
		if r.URL.Path == browserauth.HelloPath {
			json.NewEncoder(w).Encode(browserauth.Hello{Browser: "shutter", Proofs: []string{strings.Repeat("0", 64)}})
			return
		}
		io.WriteString(w, `{"webSocketDebuggerUrl": "ws://`+r.Host+`/devtools/browser/x"}`)
	}))
	defer rogue.Close()
	if _, err := pool(t, []string{rogue.URL}, []string{token}, 2*time.Second); err == nil {
		t.Fatal("the pool used a browser that proved nothing")
	}
	if leaked.Load() {
		t.Fatal("the rogue endpoint received the token")
	}
}

func TestSupervisorRestartsAndDrains(t *testing.T) {
	s, base := startSupervisor(t, token, "previous-token-0123456789abcdef")
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	syscall.Kill(-pid, syscall.SIGKILL)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, m := get(t, base+"/metrics", nil)
		if strings.Contains(m, "shutter_browser_restarts_total 1") && strings.Contains(m, "shutter_browser_up 1") {
			if !strings.Contains(m, "shutter_browser_memory_bytes") {
				t.Errorf("metrics: %s", m)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no restart seen:\n%s", m)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The previous token still works during a rotation.
	p, err := pool(t, []string{base}, []string{"previous-token-0123456789abcdef"}, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() { s.Drain(); close(drained) }()
	waitStatus(t, base+"/readyz", http.StatusServiceUnavailable)
	hh := http.Header{"Authorization": {"Bearer " + token}, "Connection": {"Upgrade"}, "Upgrade": {"websocket"},
		"Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
	if code, _ := get(t, base+"/devtools/browser", hh); code != http.StatusServiceUnavailable {
		t.Errorf("a new session while draining: %d", code)
	}
	// The open session still renders while the supervisor drains.
	site := page(t)
	if _, err := p.Render(context.Background(), parse(t, site.URL)); err != nil {
		t.Errorf("render during the drain: %v", err)
	}
	select {
	case <-drained:
		t.Fatal("the drain ended while a session was open")
	case <-time.After(300 * time.Millisecond):
	}
	p.Close()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not end after the session closed")
	}
}

func parse(t *testing.T, target string) *screenshot.Options {
	t.Helper()
	o, _, err := screenshot.NewParser(screenshot.DefaultLimits).Parse(map[string][]string{"api_key": {"k"}, "url": {target},
		"width": {"320"}, "height": {"200"}, "format": {"png"}})
	if err != nil {
		t.Fatal(err)
	}
	return o
}
