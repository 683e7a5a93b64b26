package chromium

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/testenv"
)

// TestNoUDPEscape serves a page on an allowed address (127.0.0.2) that opens
// WebRTC connections to a STUN server on a refused one (127.0.0.1). UDP
// never passes the per-render proxy, so the browser must not send any: the
// listener receives nothing.
func TestNoUDPEscape(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	_, stunPort, _ := net.SplitHostPort(udp.LocalAddr().String())
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	page := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<body style="background:#fff"><script>
for (const urls of ["stun:127.0.0.1:%[1]s", "turn:127.0.0.1:%[1]s?transport=udp"]) {
	try {
		const pc = new RTCPeerConnection({iceServers: [{urls, username: "u", credential: "c"}]});
		pc.createDataChannel("x");
		pc.createOffer().then((o) => pc.setLocalDescription(o)).catch(() => {});
	} catch (e) {}
}
</script></body>`, stunPort)
	})}}
	page.Start()
	defer page.Close()

	guard := &netguard.Guard{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	for _, browser := range []string{"local", "remote without our flags"} {
		t.Run(browser, func(t *testing.T) {
			cfg := Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second,
				Outbound: &netguard.Proxy{Guard: guard},
				Check:    func(u string) error { return guard.CheckRequest(context.Background(), u) }}
			if browser != "local" {
				cfg.URLs = []string{startRemote(t)}
			}
			p, err := startPool(cfg)
			if err != nil {
				t.Fatal(err)
			}
			render(t, p, opts(t, page.URL+"/", "format", "png", "delay", "2"))
			udp.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			buf := make([]byte, 1500)
			if n, from, err := udp.ReadFrom(buf); err == nil {
				t.Fatalf("the refused address received a %d-byte UDP packet from %s", n, from)
			} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				t.Fatal(err)
			}
		})
	}
}

// TestBrowserEnvironmentHasNoSecrets: a local browser does not inherit the
// server's environment.
func TestBrowserEnvironmentHasNoSecrets(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://user:hunter2@db/shutter")
	t.Setenv("AUTH_SECRET", "do-not-leak-this-secret")
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Stats()[0].PID
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "do-not-leak-this-secret", "DATABASE_URL", "AUTH_SECRET"} {
		if strings.Contains(string(env), secret) {
			t.Errorf("the browser's environment holds %q", secret)
		}
	}
	if !strings.Contains(string(env), "PATH=") {
		t.Errorf("environment %q", env)
	}
}

// TestSideChannelsReachNothing aims every other way a page has of making
// the browser talk at a refused address (127.0.0.1), from a page on an
// allowed one: DNS prefetch and preconnect, prefetch and prerender hints,
// beacons, keepalive fetches, CSS @import and @font-face, a service worker
// that fetches, and QUIC. A TCP and a UDP listener on the refused port must
// see no connection and no packet.
func TestSideChannelsReachNothing(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	_, port, _ := net.SplitHostPort(tcp.Addr().String())
	udp, err := net.ListenPacket("udp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	var packets atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			packets.Add(1)
		}
	}()

	refused := "127.0.0.1:" + port
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	var swFetched atomic.Int64
	page := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sw.js":
			swFetched.Add(1)
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, `self.addEventListener("install", () => { fetch("http://%[1]s/sw-install").catch(() => {}); });
self.addEventListener("activate", () => { fetch("https://%[1]s/sw-activate").catch(() => {}); });`, refused)
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Alt-Svc", `h3=":`+port+`"; ma=86400`)
			fmt.Fprintf(w, `<!doctype html><head>
<link rel="dns-prefetch" href="//%[1]s"><link rel="preconnect" href="http://%[1]s"><link rel="preconnect" href="https://%[1]s">
<link rel="prefetch" href="http://%[1]s/prefetch"><link rel="prerender" href="http://%[1]s/prerender">
<link rel="preload" as="style" href="http://%[1]s/preload.css">
<style>@import url("http://%[1]s/import.css"); @font-face { font-family: x; src: url("http://%[1]s/font.woff2"); } body { font-family: x; background: #fff }</style>
<script type="speculationrules">{"prerender": [{"source": "list", "urls": ["http://%[1]s/speculated"]}]}</script>
</head><body>text<script>
navigator.sendBeacon("http://%[1]s/beacon", "x");
fetch("http://%[1]s/keepalive", {method: "POST", body: "x", keepalive: true}).catch(() => {});
fetch("https://%[1]s/quic").catch(() => {});
navigator.serviceWorker && navigator.serviceWorker.register("/sw.js").catch(() => {});
</script></body>`, refused)
		}
	})}}
	page.Start()
	defer page.Close()

	guard := &netguard.Guard{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second,
		Outbound: &netguard.Proxy{Guard: guard},
		Check:    func(u string) error { return guard.CheckRequest(context.Background(), u) }})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second render sees any Alt-Svc the first one learnt
		render(t, p, opts(t, page.URL+"/", "format", "png", "delay", "1"))
	}
	time.Sleep(500 * time.Millisecond)
	if n, m := conns.Load(), packets.Load(); n != 0 || m != 0 {
		t.Errorf("the refused address saw %d TCP connections and %d UDP packets", n, m)
	}
	if swFetched.Load() == 0 {
		t.Log("the service worker script was not fetched (service workers unavailable in this context)")
	}
}
