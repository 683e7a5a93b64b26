package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/dashboard"
	"github.com/shutterhq/shutter/internal/testenv"
)

// cspRecorder is injected into every page before its own scripts: it
// keeps the Content-Security-Policy violations the browser reports, across
// navigations (sessionStorage of the dashboard's origin).
const cspRecorder = `document.addEventListener("securitypolicyviolation", function (e) {
  try {
    var seen = JSON.parse(sessionStorage.getItem("csp-violations") || "[]");
    seen.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
    sessionStorage.setItem("csp-violations", JSON.stringify(seen));
  } catch (err) {}
});`

// browser is a person at a real headless Chromium.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func newBrowser(t *testing.T, parent context.Context, base string) *browser {
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	b := &browser{t: t, ctx: ctx, base: base}
	// The first action opens the tab: on the context itself, not on one
	// with a deadline, whose end would close the tab.
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspRecorder})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v (at %s)", err, b.url())
	}
}

func (b *browser) url() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	u, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("location.href"))
	return u
}

func (b *browser) eval(js string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// open navigates and waits for the page's main heading.
func (b *browser) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base+path), chromedp.WaitVisible("main h1"))
}

// fill sets form fields by id.
func (b *browser) fill(kv ...string) {
	b.t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		b.do(chromedp.SetValue("#"+kv[i], kv[i+1]))
	}
}

// submit clicks a button and waits for the next page's heading.
func (b *browser) submit(button string) {
	b.t.Helper()
	before := b.eval(`String(performance.timeOrigin)`)
	b.do(chromedp.Click(button))
	deadline := time.Now().Add(30 * time.Second)
	for {
		// While the page changes an evaluation may fail: try again.
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		now, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState === "complete" ? String(performance.timeOrigin) : ""`))
		cancel()
		if err == nil && now != "" && now != before {
			break
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("no new page after clicking %s (at %s)", button, b.url())
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.do(chromedp.WaitVisible("main h1"))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return b.eval(fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel))
}

func (b *browser) value(sel string) string {
	b.t.Helper()
	return b.eval(fmt.Sprintf(`(document.querySelector(%q) || {}).value || ""`, sel))
}

// violations are the CSP violations recorded on the dashboard's origin.
func (b *browser) violations() string {
	return b.eval(`sessionStorage.getItem("csp-violations") || "[]"`)
}

// unlabelled lists form controls without an accessible name, from the
// browser's accessibility tree.
func (b *browser) unlabelled() (bad []string, checked int) {
	b.t.Helper()
	b.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		tree, err := cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		if err != nil {
			return err
		}
		for _, n := range tree.Nodes {
			if n.Ignored || n.Role == nil {
				continue
			}
			var role, name string
			json.Unmarshal(n.Role.Value, &role)
			if n.Name != nil {
				json.Unmarshal(n.Name.Value, &name)
			}
			switch role {
			case "textbox", "combobox", "checkbox", "spinbutton", "searchbox", "button", "link", "meter", "listbox":
				checked++
				if strings.TrimSpace(name) == "" {
					bad = append(bad, role)
				}
			}
		}
		return nil
	}))
	return bad, checked
}

// dashboardSite is the page the playground captures: green, counting loads.
func dashboardSite(t *testing.T) (*httptest.Server, *atomic.Int64) {
	loads := &atomic.Int64{}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			loads.Add(1)
		}
		if r.URL.Path == "/csp-control" {
			// A page that breaks its own CSP: proves that violations are seen.
			w.Header().Set("Content-Security-Policy", "script-src 'self'")
			io.WriteString(w, `<h1>control</h1><script>document.title="inline ran"</script>`)
			return
		}
		io.WriteString(w, `<body style="margin:0;background:#0a0">captured</body>`)
	}))
	t.Cleanup(site.Close)
	return site, loads
}

// TestDashboard drives the dashboard in a real browser through the whole
// story, on the embedded default and on PostgreSQL.
func TestDashboard(t *testing.T) {
	chrome := testenv.Chrome(t)
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	t.Cleanup(cancel)
	browserCtx, cancelB := chromedp.NewContext(alloc)
	t.Cleanup(cancelB)
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatal(err)
	}
	envs := map[string]func(t *testing.T) environ{
		"embedded": func(t *testing.T) environ { return environ{} },
		"postgres": func(t *testing.T) environ {
			return environ{"DATABASE_URL": testenv.PostgresDB(t)}
		},
	}
	for _, name := range []string{"embedded", "postgres"} {
		t.Run(name, func(t *testing.T) {
			env := envs[name](t)
			for k, v := range (environ{"PORT": "0", "METRICS_PORT": "-1", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome,
				"ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error", "KEY_CACHE_TTL_MS": "0", "SIGNUP": "open"}) {
				env[k] = v
			}
			dashboardStory(t, browserCtx, env)
		})
	}
}

func dashboardStory(t *testing.T, browserCtx context.Context, env environ) {
	site, loads := dashboardSite(t)
	m := startMain(t, env)
	base := "http://" + m.Addr
	ada := newBrowser(t, browserCtx, base)

	// The violation detector works: a page that breaks its own policy is
	// reported.
	ada.do(chromedp.Navigate(site.URL+"/csp-control"), chromedp.WaitVisible("h1"))
	if v := ada.violations(); !strings.Contains(v, "script-src") {
		t.Fatalf("the CSP detector saw nothing on a page that breaks its policy: %s", v)
	}

	// Not signed in: / leads to the sign-in page; the first user signs up
	// and is an admin.
	ada.open("/")
	if !strings.HasSuffix(ada.url(), "/dashboard/signin?next=/dashboard/") {
		t.Errorf("/ without a session ends at %s", ada.url())
	}
	ada.do(chromedp.Click(`a[href="/dashboard/signup"]`), chromedp.WaitVisible("#password2"))
	ada.fill("email", "ada@example.com", "password", "correct horse battery", "password2", "correct horse battery")
	ada.submit(`main button[type=submit]`)
	if h := ada.text("main h1"); h != "API keys" || !strings.Contains(ada.text("header nav"), "Users") {
		t.Fatalf("after sign-up: %q, nav %q", h, ada.text("header nav"))
	}

	// A key, shown once.
	ada.fill("name", "site")
	ada.submit(`form[action="/dashboard/keys"] button`)
	secret, signing := ada.value("#new-key"), ada.value("#new-signing")
	if !strings.HasPrefix(secret, "ss_test_") || !strings.HasPrefix(signing, "sig_") {
		t.Fatalf("created page: key %q, signing secret %q", secret, signing)
	}
	ada.open("/dashboard/")
	if html := ada.eval(`document.documentElement.outerHTML`); strings.Contains(html, secret) || strings.Contains(html, signing) {
		t.Error("the key list shows a secret again")
	}
	keyPath := ada.eval(`[...document.querySelectorAll('td a[href^="/dashboard/keys/"]')].find(a => a.textContent === "site").getAttribute("href")`)

	// The playground renders the test's page; the image decodes with the
	// requested size.
	playground := func() {
		ada.open("/dashboard/playground")
		ada.fill("api_key", secret, "f-url", site.URL+"/", "f-width", "640", "f-height", "400", "f-format", "png")
		ada.submit(`#playground-form button[type=submit]`)
	}
	playground()
	src := ada.eval(`(document.querySelector("#result-image") || {}).src || ""`)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, "data:image/png;base64,"))
	if err != nil {
		t.Fatalf("playground image: %.80s… %v (result %q)", src, err, ada.text(".result"))
	}
	img, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil || img.Bounds().Dx() != 640 || img.Bounds().Dy() != 400 {
		t.Fatalf("playground image: %v %v", img.Bounds(), err)
	}
	if r, g, _, _ := img.At(320, 200).RGBA(); g>>8 < 150 || r>>8 > 50 {
		t.Errorf("the image is not the green page: %v", img.At(320, 200))
	}
	if loads.Load() != 1 {
		t.Errorf("the page server saw %d loads, want 1", loads.Load())
	}
	if src := ada.value("#img-src"); !strings.Contains(src, "api_key="+secret) || strings.Contains(ada.url(), secret) {
		t.Errorf("img src %q, page URL %q", src, ada.url())
	}

	// Allowed domains: another host is refused with 403.
	ada.open(keyPath)
	ada.fill("domains", "allowed.example\n*.allowed.example")
	ada.submit(`form[action="` + keyPath + `"] button[type=submit]`)
	if n := ada.text(".notice"); n != "Saved." {
		t.Errorf("after saving the domains: %q (%q)", n, ada.text(".error"))
	}
	playground()
	if s, e := ada.text(".result h2"), ada.text("#result-error"); s != "Result: 403" || !strings.Contains(e, "may not capture") {
		t.Errorf("a host outside the allowed domains: %q %q", s, e)
	}
	if loads.Load() != 1 {
		t.Errorf("the refused request reached the page server (%d loads)", loads.Load())
	}

	// Usage chart and request log show the render and the refusal.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ada.open("/dashboard/usage?key=" + strings.TrimPrefix(keyPath, "/dashboard/keys/"))
		if strings.Contains(ada.text("main > p"), "1 rendered") || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if p := ada.text("main > p"); !strings.Contains(p, "1 rendered") {
		t.Errorf("usage summary: %q", p)
	}
	if n := ada.eval(`String(document.querySelectorAll(".chart rect.ok").length)`); n != "1" {
		t.Errorf("the chart has %s rendered bars, want 1", n)
	}
	// The log is written every few seconds: the refusal may come a write
	// after the render.
	var log string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		ada.open("/dashboard/requests")
		log = ada.text("table tbody")
		if strings.Contains(log, "403") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(log, "200") || !strings.Contains(log, "403") || !strings.Contains(log, "127.0.0.1") {
		t.Errorf("request log: %q", log)
	}

	// A member sees neither ada's key nor the admin pages.
	bob := newBrowser(t, browserCtx, base)
	bob.open("/dashboard/signup")
	bob.fill("email", "bob@example.com", "password", "another fine password", "password2", "another fine password")
	bob.submit(`main button[type=submit]`)
	if strings.Contains(bob.text("main"), "site") || strings.Contains(bob.text("header nav"), "Users") {
		t.Errorf("bob's keys page: %q nav %q", bob.text("main"), bob.text("header nav"))
	}
	bob.open(keyPath)
	if h := bob.text("main h1"); h != "Not Found" {
		t.Errorf("bob opened ada's key: %q", h)
	}
	bob.open("/dashboard/admin/users")
	if h := bob.text("main h1"); h != "Forbidden" {
		t.Errorf("bob opened the admin page: %q", h)
	}
	// A form sent without its CSRF token is refused.
	bob.open("/dashboard/")
	bob.eval(`document.querySelector('form[action="/dashboard/keys"] input[name=csrf_token]').remove(); ""`)
	bob.fill("name", "forged")
	bob.submit(`form[action="/dashboard/keys"] button`)
	if h := bob.text("main h1"); h != "Forbidden" {
		t.Errorf("a form without its CSRF token: %q", h)
	}
	bob.open("/dashboard/")
	if strings.Contains(bob.text("main"), "forged") {
		t.Error("the forged key was made")
	}

	// Revoke with confirmation; the key stops working.
	ada.open(keyPath)
	ada.do(chromedp.Click(`a[href="`+keyPath+`/revoke"]`), chromedp.WaitVisible(`form[action="`+keyPath+`/revoke"]`))
	ada.submit(`form[action="` + keyPath + `/revoke"] button`)
	if n := ada.text(".notice"); !strings.Contains(n, "revoked") {
		t.Errorf("after revoking: %q", n)
	}
	resp, err := http.Get(base + "/v1/screenshots/take?api_key=" + secret + "&url=http://allowed.example/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("the revoked key: %d, want 403", resp.StatusCode)
	}

	// Every page: the policy header, labelled controls, and no violation.
	pages := []string{"/dashboard/", keyPath, "/dashboard/usage", "/dashboard/requests", "/dashboard/playground", "/dashboard/tokens",
		"/dashboard/account", "/dashboard/admin/users", "/dashboard/admin/health", "/dashboard/signin"}
	var mu sync.Mutex
	for _, p := range pages {
		ada.open(p)
		if bad, checked := ada.unlabelled(); len(bad) > 0 || checked < 5 {
			t.Errorf("%s: %d controls checked; without a name: %v", p, checked, bad)
		}
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		mu.Lock()
		if resp.Header.Get("Content-Security-Policy") != dashboard.CSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: headers %v", p, resp.Header)
		}
		mu.Unlock()
	}
	if v := ada.violations(); v != "[]" {
		t.Errorf("CSP violations on the dashboard: %s", v)
	}
	if v := bob.violations(); v != "[]" {
		t.Errorf("CSP violations on the dashboard (bob): %s", v)
	}
}
