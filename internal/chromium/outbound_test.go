package chromium

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

// counter is a server that records what it receives.
type counter struct {
	mu   sync.Mutex
	hits []string
}

func (c *counter) add(r *http.Request) {
	c.mu.Lock()
	c.hits = append(c.hits, r.Host+r.URL.Path)
	c.mu.Unlock()
}

func (c *counter) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.hits...)
}

// listenPair listens on 127.0.0.2 and 127.0.0.1 with the same port, so that
// a name that "rebinds" from one address to the other reaches the other
// server.
func listenPair(t *testing.T) (public, internal net.Listener, port string) {
	for range 20 {
		pub, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ = net.SplitHostPort(pub.Addr().String())
		in, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err == nil {
			return pub, in, port
		}
		pub.Close()
	}
	t.Fatal("no port free on both addresses")
	return nil, nil, ""
}

// TestOutboundPolicyInTheBrowser serves a "public" site on 127.0.0.2 (let
// through by an allow-list, as a real public address would be) and an
// internal one on 127.0.0.1. Names resolve through a stub: public.test to
// the public address, evil.test to the internal one, rebind.test first to
// the public and then to the internal one. Whatever the page tries, the
// internal server receives nothing.
func TestOutboundPolicyInTheBrowser(t *testing.T) {
	pubLn, inLn, port := listenPair(t)
	var internal, public counter
	in := &httptest.Server{Listener: inLn, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internal.add(r)
		io.WriteString(w, "internal secret")
	})}}
	in.Start()
	defer in.Close()
	evil := "http://evil.test:" + port
	loop := "http://127.0.0.1:" + port
	pub := &httptest.Server{Listener: pubLn, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		public.add(r)
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<body style="background:#0000ff">
<img src="%[1]s/img-by-ip"><img src="%[2]s/img-by-name"><img src="/redirect-sub">
<iframe src="%[2]s/frame"></iframe>
<link rel="prefetch" href="%[2]s/prefetch">
<script>
fetch("%[1]s/fetch").catch(() => {});
fetch("/same-origin-fetch");
try { new WebSocket("ws://127.0.0.1:%[3]s/ws"); } catch (e) {}
try { new WebSocket("ws://public.test:%[3]s/ws-ok"); } catch (e) {}
try { new EventSource("%[2]s/events"); } catch (e) {}
navigator.sendBeacon("%[1]s/beacon", "x");
</script></body>`, loop, evil, port)
		case "/redirect-sub":
			http.Redirect(w, r, loop+"/via-redirect", http.StatusFound)
		case "/redirect-main":
			http.Redirect(w, r, loop+"/main-redirect", http.StatusFound)
		default:
			io.WriteString(w, "ok")
		}
	})}}
	pub.Start()
	defer pub.Close()

	var rebinds atomic.Int64
	guard := &netguard.Guard{
		AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "public.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
			case "evil.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "rebind.test":
				if rebinds.Add(1) == 1 {
					return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
				}
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		},
	}
	var refused atomic.Int64
	newPool := func(check bool) *Pool {
		cfg := Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second,
			Outbound:  &netguard.Proxy{Guard: guard},
			OnBlocked: func(c string) { refused.Add(1) }}
		if check {
			cfg.Check = func(u string) error { return guard.CheckRequest(context.Background(), u) }
		}
		p, err := startPool(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := newPool(true)
	site := "http://public.test:" + port

	// Every kind of request to the internal server is stopped; the page
	// itself and its own requests go through.
	img := render(t, p, opts(t, site+"/", "format", "png"))
	if c := img.At(600, 600); !near(c, blue, 0) {
		t.Errorf("page pixel %v", c)
	}
	time.Sleep(300 * time.Millisecond) // late requests of the page
	if got := internal.all(); len(got) != 0 {
		t.Fatalf("the internal server received %v", got)
	}
	hits := strings.Join(public.all(), " ")
	for _, want := range []string{"/same-origin-fetch", "/ws-ok", "/redirect-sub"} {
		if !strings.Contains(hits, want) {
			t.Errorf("the public server did not receive %s (through the proxy): %s", want, hits)
		}
	}
	if refused.Load() == 0 {
		t.Error("no refusal was counted")
	}

	// A main-frame redirect to the internal address is refused.
	_, err := p.Render(context.Background(), opts(t, site+"/redirect-main"))
	if screenshot.ErrorCode(err) != screenshot.EINVALID || !strings.Contains(screenshot.ErrorMessage(err), "not") {
		t.Errorf("redirect to loopback: %v, want EINVALID", err)
	}

	// Rebinding: the check before the render sees the public address; the
	// browser's connection would see the internal one. Only the proxy
	// stands between them here (no interception check), and it connects
	// only to what it checked.
	bare := newPool(false)
	rebind := "http://rebind.test:" + port + "/"
	if err := guard.CheckURL(context.Background(), rebind); err != nil {
		t.Fatalf("first resolution should look public: %v", err)
	}
	_, err = bare.Render(context.Background(), opts(t, rebind))
	if screenshot.ErrorCode(err) != screenshot.EINVALID {
		t.Errorf("rebinding: %v, want EINVALID", err)
	}
	if got := internal.all(); len(got) != 0 {
		t.Fatalf("the internal server received %v", got)
	}
}

// TestOutboundTLSThroughProxy checks that HTTPS (CONNECT) goes through the
// proxy to the checked address.
func TestOutboundTLSThroughProxy(t *testing.T) {
	var hits atomic.Int64
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<body style="background:#0000ff">secure</body>`)
	}))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv.Listener = ln
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	guard := &netguard.Guard{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
		}}
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second,
		Outbound: &netguard.Proxy{Guard: guard}, Flags: []string{"ignore-certificate-errors"}})
	if err != nil {
		t.Fatal(err)
	}
	img := render(t, p, opts(t, "https://secure.test:"+port+"/", "format", "png"))
	if c := img.At(10, 10); !near(c, blue, 0) || hits.Load() == 0 {
		t.Errorf("https through the proxy: pixel %v, hits %d", c, hits.Load())
	}
}
