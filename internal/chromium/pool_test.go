package chromium

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "golang.org/x/image/webp"

	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

var (
	poolOnce   sync.Once
	sharedP    *Pool
	sharedErr  error
	quietLog   = slog.New(slog.NewTextHandler(io.Discard, nil))
	parser     = screenshot.NewParser(screenshot.DefaultLimits)
	closePools []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range closePools {
		c()
	}
	os.Exit(code)
}

// pool returns the package's shared pool of one local browser.
func pool(t testing.TB) *Pool {
	t.Helper()
	path := testenv.Chrome(t)
	poolOnce.Do(func() {
		sharedP, sharedErr = startPool(Config{ExecPath: path, Timeout: 20 * time.Second})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedP
}

func startPool(cfg Config) (*Pool, error) {
	p, err := New(cfg, quietLog)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	closePools = append(closePools, func() { p.Close() })
	return p, nil
}

// site is a page server that remembers every request it received.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newSite(t testing.TB, routes map[string]string) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(body, "CSP:") {
			csp, rest, _ := strings.Cut(strings.TrimPrefix(body, "CSP:"), "\n")
			w.Header().Set("Content-Security-Policy", csp)
			body = rest
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns the received requests whose path starts with prefix.
func (s *site) requests(prefix string) []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*http.Request
	for _, r := range s.reqs {
		if strings.HasPrefix(r.URL.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// opts parses a query the way the endpoint does.
func opts(t testing.TB, target string, kv ...string) *screenshot.Options {
	t.Helper()
	q := url.Values{"api_key": {"k"}, "url": {target}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	o, _, err := parser.Parse(q)
	if err != nil {
		t.Fatalf("parse %v: %v", q, err)
	}
	return o
}

func render(t testing.TB, p *Pool, o *screenshot.Options) image.Image {
	t.Helper()
	img, err := p.Render(context.Background(), o)
	if err != nil {
		t.Fatalf("render %s: %v", o.URL, err)
	}
	dec, format, err := image.Decode(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if format != string(o.Format) {
		t.Fatalf("format = %s, want %s", format, o.Format)
	}
	return dec
}

// near reports whether c is within tol of want on every channel (lossy
// formats move colours a little).
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(x uint32, y uint8) bool { v := int(x>>8) - int(y); return v >= -tol && v <= tol }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

var (
	red   = color.RGBA{255, 0, 0, 255}
	blue  = color.RGBA{0, 0, 255, 255}
	green = color.RGBA{0, 128, 0, 255}
	black = color.RGBA{0, 0, 0, 255}
	white = color.RGBA{255, 255, 255, 255}
)

const boxPage = `<!doctype html><html><body style="margin:0;background:#ff0000">
<div id="box" style="position:absolute;left:30px;top:40px;width:200px;height:100px;background:#0000ff"></div>
</body></html>`

func TestFormatsAndScale(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": boxPage})
	for _, format := range []string{"png", "jpeg", "webp"} {
		for _, dsf := range []string{"1", "1.5", "2"} {
			t.Run(format+"/"+dsf, func(t *testing.T) {
				o := opts(t, s.URL, "format", format, "device_scale_factor", dsf, "width", "400", "height", "300")
				img := render(t, p, o)
				f, _ := strconv.ParseFloat(dsf, 64)
				want := image.Rect(0, 0, int(400*f), int(300*f))
				if img.Bounds() != want {
					t.Fatalf("bounds = %v, want %v", img.Bounds(), want)
				}
				tol := 0
				if format != "png" {
					tol = 24
				}
				if c := img.At(5, 5); !near(c, red, tol) {
					t.Errorf("pixel (5,5) = %v, want red", c)
				}
				// The box covers CSS (30..230, 40..140).
				if c := img.At(int(100*f), int(90*f)); !near(c, blue, tol) {
					t.Errorf("pixel in box = %v, want blue", c)
				}
			})
		}
	}
}

func TestDefaultViewport(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": boxPage})
	img := render(t, p, opts(t, s.URL, "format", "png"))
	if img.Bounds() != image.Rect(0, 0, 1280, 720) {
		t.Fatalf("bounds = %v, want 1280x720", img.Bounds())
	}
}

func TestSelector(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": boxPage,
		"/tall": `<body style="margin:0"><div style="height:3000px"></div><p id="low" style="margin:0;width:120px;height:60px;background:#0000ff"></p></body>`})
	img := render(t, p, opts(t, s.URL, "format", "png", "selector", "#box", "device_scale_factor", "2"))
	if img.Bounds() != image.Rect(0, 0, 400, 200) {
		t.Fatalf("element bounds = %v, want 400x200", img.Bounds())
	}
	for _, pt := range []image.Point{{0, 0}, {399, 199}, {200, 100}} {
		if c := img.At(pt.X, pt.Y); !near(c, blue, 0) {
			t.Errorf("pixel %v = %v, want blue (only the element)", pt, c)
		}
	}
	// An element below the fold is captured too.
	img = render(t, p, opts(t, s.URL+"/tall", "format", "png", "selector", "#low"))
	if img.Bounds() != image.Rect(0, 0, 120, 60) || !near(img.At(60, 30), blue, 0) {
		t.Fatalf("below-the-fold element: bounds %v pixel %v", img.Bounds(), img.At(60, 30))
	}

	for sel, code := range map[string]screenshot.Code{"#missing": screenshot.EUNPROCESSABLE, "[[[": screenshot.EINVALID} {
		_, err := p.Render(context.Background(), opts(t, s.URL, "selector", sel))
		if got := screenshot.ErrorCode(err); got != code {
			t.Errorf("selector %q: code %s (%v), want %s", sel, got, err, code)
		}
	}
}

func TestMediaFeatures(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": `<style>
		body { margin:0; background:#ffffff }
		#m { position:absolute; left:0; top:0; width:50px; height:50px; background:#ff0000 }
		@media (prefers-color-scheme: dark) { body { background:#000000 } }
		@media (prefers-reduced-motion: reduce) { #m { background:#008000 } }
	</style><div id="m"></div>`})
	for _, tc := range []struct {
		kv           []string
		page, motion color.RGBA
	}{
		{nil, white, red},
		{[]string{"prefers_color_scheme", "dark"}, black, red},
		{[]string{"prefers_reduced_motion", "reduce"}, white, green},
	} {
		img := render(t, p, opts(t, s.URL, append([]string{"format", "png"}, tc.kv...)...))
		if c := img.At(300, 300); !near(c, tc.page, 0) {
			t.Errorf("%v: page pixel = %v, want %v", tc.kv, c, tc.page)
		}
		if c := img.At(10, 10); !near(c, tc.motion, 0) {
			t.Errorf("%v: motion pixel = %v, want %v", tc.kv, c, tc.motion)
		}
	}
}

func TestUserAgentHeadersCookies(t *testing.T) {
	p := pool(t)
	third := newSite(t, map[string]string{})
	s := newSite(t, map[string]string{"/page": `<img src="/sub.png"><img src="` + third.URL + `/third.png">`})
	o := opts(t, s.URL+"/page",
		"user_agent", "ShutterTest/1.0",
		"headers", "X-Custom: one\r\nAccept-Language: de-DE",
		"cookies", "session=abc123\ntheme=dark; Path=/")
	if _, err := p.Render(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/page", "/sub.png"} {
		rs := s.requests(path)
		if len(rs) != 1 {
			t.Fatalf("%s requested %d times", path, len(rs))
		}
		r := rs[0]
		if ua := r.UserAgent(); ua != "ShutterTest/1.0" {
			t.Errorf("%s: User-Agent = %q", path, ua)
		}
		if v := r.Header.Get("X-Custom"); v != "one" {
			t.Errorf("%s: X-Custom = %q", path, v)
		}
		if v := r.Header.Get("Accept-Language"); v != "de-DE" {
			t.Errorf("%s: Accept-Language = %q", path, v)
		}
		if c, err := r.Cookie("session"); err != nil || c.Value != "abc123" {
			t.Errorf("%s: cookie session = %v, %v", path, c, err)
		}
		if c, err := r.Cookie("theme"); err != nil || c.Value != "dark" {
			t.Errorf("%s: cookie theme = %v, %v", path, c, err)
		}
	}
	// Headers are for the target's origin only: a third party the page
	// loads from does not receive them.
	rs := third.requests("/third.png")
	if len(rs) != 1 {
		t.Fatalf("third-party image requested %d times", len(rs))
	}
	if v := rs[0].Header.Get("X-Custom"); v != "" {
		t.Errorf("the third party received X-Custom: %q", v)
	}
	if v := rs[0].Header.Get("Accept-Language"); v == "de-DE" {
		t.Errorf("the third party received the client's Accept-Language")
	}
}

func TestDefaultUserAgentIsNotHeadless(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": `ok`})
	render(t, p, opts(t, s.URL))
	ua := s.requests("/")[0].UserAgent()
	if strings.Contains(ua, "Headless") || !strings.Contains(ua, "Chrome/") {
		t.Fatalf("default User-Agent = %q", ua)
	}
}

func TestNoLeaksBetweenRequests(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{
		"/set":   `<script>document.cookie="leak=1; max-age=3600"; localStorage.setItem("leak","1")</script>`,
		"/check": `<script>fetch("/report?ls=" + (localStorage.getItem("leak") || ""))</script>`,
	})
	render(t, p, opts(t, s.URL+"/set"))
	render(t, p, opts(t, s.URL+"/check"))
	for _, r := range s.requests("/check") {
		if _, err := r.Cookie("leak"); err == nil {
			t.Error("cookie of the first request reached the second")
		}
	}
	rep := s.requests("/report")
	if len(rep) != 1 || rep[0].URL.Query().Get("ls") != "" {
		t.Errorf("localStorage leaked or report missing: %v", rep)
	}
}

func TestBlocking(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": `<link rel="stylesheet" href="/style.css">
		<img src="/img/a.png"><script src="/ads/track.js"></script><script src="/app.js"></script>`})
	o := opts(t, s.URL, "block_requests", "*/ads/*\nnothing-matches", "block_resources", "image,stylesheet")
	render(t, p, o)
	for _, path := range []string{"/ads/", "/img/", "/style.css"} {
		if n := len(s.requests(path)); n != 0 {
			t.Errorf("%s was requested %d times; it is blocked", path, n)
		}
	}
	if n := len(s.requests("/app.js")); n != 1 {
		t.Errorf("/app.js requested %d times, want 1 (not blocked)", n)
	}
	// Blocking the page itself is the client's mistake.
	_, err := p.Render(context.Background(), opts(t, s.URL, "block_resources", "document"))
	if screenshot.ErrorCode(err) != screenshot.EINVALID {
		t.Errorf("blocking the document: %v, want EINVALID", err)
	}
}

func TestBypassCSP(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": "CSP:script-src 'none'\n" +
		`<body style="margin:0;background:#ff0000"><script>document.body.style.background="#008000"</script></body>`})
	if c := render(t, p, opts(t, s.URL, "format", "png")).At(10, 10); !near(c, red, 0) {
		t.Errorf("without bypass the inline script must not run: pixel %v", c)
	}
	if c := render(t, p, opts(t, s.URL, "format", "png", "bypass_csp", "true")).At(10, 10); !near(c, green, 0) {
		t.Errorf("with bypass the inline script must run: pixel %v", c)
	}
}

func TestDeviceEmulation(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": `<meta name="viewport" content="width=device-width"><script>
		const q = new URLSearchParams({
			touch: navigator.maxTouchPoints > 0 && ("ontouchstart" in window),
			orientation: screen.orientation.type,
			ua: navigator.userAgent,
			width: innerWidth,
		});
		fetch("/report?" + q);
	</script>`})
	for _, tc := range []struct {
		kv                      []string
		touch, orientation, sub string
	}{
		{nil, "false", "landscape-primary", "Chrome/"},
		{[]string{"is_mobile", "true"}, "false", "portrait-primary", "Mobile"},
		{[]string{"is_mobile", "true", "is_landscape", "true"}, "false", "landscape-primary", "Android"},
		{[]string{"has_touch", "true"}, "true", "landscape-primary", "Chrome/"},
	} {
		before := len(s.requests("/report"))
		render(t, p, opts(t, s.URL, append([]string{"width", "400", "height", "700"}, tc.kv...)...))
		rs := s.requests("/report")
		if len(rs) != before+1 {
			t.Fatalf("%v: page did not report", tc.kv)
		}
		q := rs[len(rs)-1].URL.Query()
		if q.Get("touch") != tc.touch || q.Get("orientation") != tc.orientation || !strings.Contains(q.Get("ua"), tc.sub) || q.Get("width") != "400" {
			t.Errorf("%v: page saw %v", tc.kv, q)
		}
	}
}

func TestTimeout(t *testing.T) {
	p := pool(t)
	release := make(chan struct{})
	defer close(release)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Render(ctx, opts(t, slow.URL))
	if screenshot.ErrorCode(err) != screenshot.ETIMEOUT {
		t.Fatalf("err = %v, want ETIMEOUT", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timed-out render returned after %s", d)
	}
	// The browser still works afterwards.
	s := newSite(t, map[string]string{"/": boxPage})
	render(t, p, opts(t, s.URL))
}

func TestUnreachable(t *testing.T) {
	p := pool(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there now
	_, err := p.Render(context.Background(), opts(t, addr))
	if screenshot.ErrorCode(err) != screenshot.EUPSTREAM || !strings.Contains(screenshot.ErrorMessage(err), "refused") {
		t.Fatalf("err = %v, want EUPSTREAM naming the refusal", err)
	}
}

func TestHTTPErrorPageIsCaptured(t *testing.T) {
	p := pool(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, `<body style="margin:0;background:#0000ff">server error</body>`)
	}))
	defer srv.Close()
	if c := render(t, p, opts(t, srv.URL, "format", "png")).At(5, 5); !near(c, blue, 0) {
		t.Fatalf("500 page pixel = %v, want the page's blue", c)
	}
}

func TestDialogsDoNotStall(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": `<body style="background:#0000ff"><script>alert("a"); confirm("b"); prompt("c")</script></body>`})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Render(ctx, opts(t, s.URL)); err != nil {
		t.Fatal(err)
	}
}

// startRemote starts a headless shell that listens for DevTools on a free
// loopback port, as the browser pods do.
func startRemote(t *testing.T) string {
	path := testenv.Chrome(t)
	port, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
		"--user-data-dir="+dir, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port="+strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(endpoint + "/json/version")
		if err == nil {
			resp.Body.Close()
			return endpoint
		}
		if time.Now().After(deadline) {
			t.Fatalf("remote browser did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRemoteBrowser(t *testing.T) {
	endpoint := startRemote(t)
	p, err := startPool(Config{URLs: []string{endpoint}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, map[string]string{"/": boxPage})
	img := render(t, p, opts(t, s.URL, "format", "png", "width", "300", "height", "200"))
	if img.Bounds() != image.Rect(0, 0, 300, 200) || !near(img.At(5, 5), red, 0) {
		t.Fatalf("remote render: bounds %v pixel %v", img.Bounds(), img.At(5, 5))
	}
}

func TestBrowserKilledMidRender(t *testing.T) {
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)

	pid := p.Stats()[0].PID
	errc := make(chan error, 1)
	go func() {
		_, err := p.Render(context.Background(), opts(t, slow.URL))
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	proc, _ := os.FindProcess(pid)
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if screenshot.ErrorCode(err) != screenshot.EUNAVAILABLE {
			t.Errorf("in-flight render: %v, want EUNAVAILABLE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight render hung after the browser died")
	}
	s := newSite(t, map[string]string{"/": boxPage})
	for i := range 3 {
		img, err := p.Render(context.Background(), opts(t, s.URL, "format", "png"))
		if err != nil {
			t.Fatalf("render %d after the crash: %v", i, err)
		}
		if len(img.Data) == 0 {
			t.Fatal("empty image")
		}
	}
	st := p.Stats()[0]
	if st.Restarts != 1 || st.PID == pid || !st.Ready {
		t.Errorf("stats after restart: %+v", st)
	}
}

func TestClassifyKeepsCodedErrors(t *testing.T) {
	e := screenshot.Errorf(screenshot.EINVALID, "x")
	if got := classify(context.Background(), fmt.Errorf("wrap: %w", e)); !errors.Is(got, e) {
		t.Fatalf("classify lost the coded error: %v", got)
	}
	// A page that replaces itself under the capture is the page's doing.
	gone := errors.New("capture: Not attached to an active page (-32000)")
	if got := classify(context.Background(), gone); screenshot.ErrorCode(got) != screenshot.EUPSTREAM {
		t.Errorf("a page gone under the capture: %v", got)
	}
}

// netListen returns a free loopback port.
func netListen() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func TestLoadTimeout(t *testing.T) {
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second, LoadTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	// The document arrives, but an image never finishes, so the load event
	// never fires.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<img src="/never.png">`)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	_, err = p.Render(context.Background(), opts(t, srv.URL))
	if screenshot.ErrorCode(err) != screenshot.ETIMEOUT || !strings.Contains(screenshot.ErrorMessage(err), "did not finish loading within 1s") {
		t.Fatalf("err = %v, want ETIMEOUT for the load", err)
	}
}

// TestKeyDomainsFollowNavigations maps two names to the test server with the
// browser's host-resolver rules: a page on the allowed name that redirects,
// refreshes or scripts its way to the other name is refused, and the other
// name receives nothing.
func TestKeyDomainsFollowNavigations(t *testing.T) {
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second,
		Flags: []string{"host-resolver-rules=MAP allowed.test 127.0.0.1, MAP other.test 127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	hosts := map[string]int{}
	var port string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		mu.Lock()
		hosts[host]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "http://other.test:"+port+"/", http.StatusFound)
		case "/refresh":
			io.WriteString(w, `<meta http-equiv="refresh" content="0; url=http://other.test:`+port+`/">`)
		case "/script":
			io.WriteString(w, `<script>setTimeout(() => location.href = "http://other.test:`+port+`/", 0)</script>`)
		case "/frame":
			io.WriteString(w, `<body style="background:#00f"><iframe src="http://other.test:`+port+`/"></iframe></body>`)
		default:
			io.WriteString(w, `<body style="background:#00f">ok</body>`)
		}
	}))
	defer srv.Close()
	port = srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	base := "http://allowed.test:" + port
	allowed := []string{"allowed.test"}
	for _, path := range []string{"/redirect", "/refresh", "/script"} {
		o := opts(t, base+path)
		o.AllowedDomains = allowed
		_, err := p.Render(context.Background(), o)
		if screenshot.ErrorCode(err) != screenshot.EFORBIDDEN || !strings.Contains(screenshot.ErrorMessage(err), `"other.test"`) {
			t.Errorf("%s: %v, want EFORBIDDEN naming other.test", path, err)
		}
	}
	// The allowed page itself, and an iframe of another host (not a
	// main-frame navigation), render.
	for _, path := range []string{"/", "/frame"} {
		o := opts(t, base+path)
		o.AllowedDomains = allowed
		if _, err := p.Render(context.Background(), o); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hosts["other.test"] != 1 { // only the iframe
		t.Errorf("other.test received %d requests, want only the iframe's", hosts["other.test"])
	}
}

// TestDiscovery finds browsers through dns:// URLs (an address stands in for
// the headless Service's name) and follows changes of the answer.
func TestDiscovery(t *testing.T) {
	first := startRemote(t)
	second := startRemote(t)
	hp := func(endpoint string) string { return strings.TrimPrefix(endpoint, "http://") }
	p, err := startPool(Config{URLs: []string{"dns://" + hp(first)}, Timeout: 20 * time.Second, DiscoveryInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, map[string]string{"/": boxPage})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := p.Render(ctx, opts(t, s.URL)); err != nil {
		t.Fatalf("render through a discovered browser: %v", err)
	}
	if st := p.Stats(); len(st) != 1 || st[0].Name != first || !st[0].Ready {
		t.Fatalf("stats = %+v", st)
	}
	// The name now answers with another address: the old browser is dropped.
	p.discovery = []string{hp(second)}
	p.discover(context.Background())
	if _, err := p.Render(ctx, opts(t, s.URL)); err != nil {
		t.Fatalf("render after the change: %v", err)
	}
	if st := p.Stats(); len(st) != 1 || st[0].Name != second {
		t.Fatalf("stats after the change = %+v", st)
	}
}

// TestCookiesForAnIPv6Target: a cookie without Domain is a host-only
// cookie of the target, also when the host is an IPv6 literal (the browser
// refused the bare address as a Domain).
func TestCookiesForAnIPv6Target(t *testing.T) {
	p := pool(t)
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		testenv.Missing(t, "an IPv6 loopback address", err)
	}
	got := make(chan string, 4)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err == nil {
			got <- c.Value
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	render(t, p, opts(t, "http://"+ln.Addr().String()+"/", "cookies", "session=v6; Path=/"))
	select {
	case v := <-got:
		if v != "v6" {
			t.Errorf("cookie = %q", v)
		}
	default:
		t.Error("the IPv6 target received no cookie")
	}
}
