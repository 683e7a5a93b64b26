package chromium

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/browserd"
	"github.com/shutterhq/shutter/internal/testenv"
)

// TestBrowsersRollWithoutLosingARender renders a slow page in a loop while
// the discovery answer changes from browser A to browser B and A's
// supervisor gets SIGTERM (drains): no render fails.
func TestBrowsersRollWithoutLosingARender(t *testing.T) {
	const token = "drain-test-token-0123456789abcdef"
	start := func() (*browserd.Supervisor, string) {
		s, err := browserd.New(browserd.Config{ExecPath: testenv.Chrome(t), Tokens: []string{token}, Listen: "127.0.0.1:0",
			DrainTimeout: 20 * time.Second, Flags: []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic"}}, quietLog)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if resp, err := http.Get("http://" + s.Addr + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("supervisor not ready")
			}
		}
		return s, s.Addr
	}
	a, addrA := start()
	_, addrB := start()
	// The page's load waits for an image that takes 800 ms.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow.png" {
			time.Sleep(800 * time.Millisecond)
			w.Header().Set("Content-Type", "image/png")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<body style="background:#00f"><img src="/slow.png"></body>`)
	}))
	defer site.Close()
	p, err := startPool(Config{URLs: []string{"dns://" + addrA}, BrowserTokens: []string{token}, Timeout: 20 * time.Second,
		DiscoveryInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var failed, done atomic.Int64
	var errs sync.Map
	stopLoop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stopLoop:
					return
				default:
				}
				if _, err := p.Render(context.Background(), opts(t, site.URL+"/")); err != nil {
					failed.Add(1)
					errs.Store(err.Error(), true)
				} else {
					done.Add(1)
				}
			}
		})
	}
	time.Sleep(1200 * time.Millisecond) // renders in flight on A
	p.discovery = []string{addrB}
	p.discover(context.Background())
	drained := make(chan struct{})
	go func() { a.Drain(); close(drained) }() // A's pod gets SIGTERM
	time.Sleep(2500 * time.Millisecond)
	close(stopLoop)
	wg.Wait()
	select {
	case <-drained:
	case <-time.After(20 * time.Second):
		t.Error("A's supervisor never finished draining")
	}
	if n := failed.Load(); n != 0 {
		var msgs []string
		errs.Range(func(k, _ any) bool { msgs = append(msgs, k.(string)); return true })
		t.Errorf("%d renders failed during the roll: %s", n, strings.Join(msgs, "; "))
	}
	if st := p.Stats(); len(st) != 1 || !strings.Contains(st[0].Name, addrB) || done.Load() < 6 {
		t.Errorf("after the roll: stats %+v, %d renders", st, done.Load())
	}
}
