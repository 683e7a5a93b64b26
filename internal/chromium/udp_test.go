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
