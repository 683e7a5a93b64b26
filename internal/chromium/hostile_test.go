package chromium

import (
	"bytes"
	"context"
	"image"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

// redFile is a local page that no target may show.
var redFile string

// hostileSite serves pages that try to hang, exhaust or escape a render.
func hostileSite(t *testing.T) *httptest.Server {
	redFile = filepath.Join(t.TempDir(), "local.html")
	os.WriteFile(redFile, []byte(`<body style="background:#ff0000">local file</body>`), 0o644)
	html := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, body)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/loop":
			html(w, `<script>while (true) {}</script>`)
		case "/loop-after-load":
			html(w, `<body style="background:#0000ff"><script>onload = () => setTimeout(() => { while (true) {} }, 0)</script></body>`)
		case "/memory":
			html(w, `<script>const a = []; while (true) a.push(new Array(1e6).fill(1.5));</script>`)
		case "/memory-after-load":
			html(w, `<body><script>onload = () => setTimeout(() => { const a = []; while (true) a.push(new Array(1e6).fill(1.5)); }, 0)</script></body>`)
		case "/tall":
			html(w, `<body style="margin:0"><div id="tall" style="height:100000px;width:400px;background:linear-gradient(#f00,#00f)"></div></body>`)
		case "/dialogs":
			html(w, `<body style="background:#0000ff"><script>
				alert("a"); confirm("b"); prompt("c");
				addEventListener("beforeunload", e => { e.preventDefault(); e.returnValue = "stay"; });
			</script></body>`)
		case "/popups":
			html(w, `<body style="background:#0000ff"><script>for (let i = 0; i < 5; i++) window.open("/popup-" + i, "_blank");</script></body>`)
		case "/download":
			w.Header().Set("Content-Disposition", `attachment; filename="evil.bin"`)
			w.Header().Set("Content-Type", "application/octet-stream")
			io.WriteString(w, "MZ not a real program")
		case "/download-link":
			html(w, `<body style="background:#0000ff"><a id="d" href="/download" download>x</a><script>document.getElementById("d").click()</script></body>`)
		case "/to-file", "/to-data", "/to-chrome", "/to-view-source":
			target := map[string]string{
				"/to-file":        "file://" + redFile,
				"/to-data":        "data:text/html,<body style='background:%23ff0000'>",
				"/to-chrome":      "chrome://version",
				"/to-view-source": "view-source:file://" + redFile,
			}[r.URL.Path]
			html(w, `<body style="background:#0000ff"><script>location.href = "`+target+`"</script></body>`)
		case "/forever":
			html(w, `<body style="background:#0000ff"><script>setTimeout(() => location.reload(), 30)</script></body>`)
		case "/trickle":
			w.Header().Set("Content-Type", "text/html")
			for i := 0; i < 200; i++ {
				if _, err := io.WriteString(w, "<p>"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		default:
			html(w, `<body style="background:#0000ff">ok</body>`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHostilePages renders each hostile page: each gives an image or a clear
// error within its deadline. Afterwards the pool has its one browser, no
// stray tabs or browser contexts, no downloaded file, and still renders.
func TestHostilePages(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // where a browser would put downloads
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 5 * time.Second, LoadTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	site := hostileSite(t)
	tlsSite := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSite.Close()
	// The browser's processes and the temporary directories before.
	if _, err := p.Render(context.Background(), opts(t, site.URL+"/")); err != nil {
		t.Fatal(err)
	}
	p.jobs.Wait()
	pid := p.Stats()[0].PID
	procsBefore := children(pid)
	tmpBefore := runnerDirs()

	for _, tc := range []struct {
		path string
		// ok: an image is acceptable; codes: the acceptable error codes
		ok    bool
		codes []screenshot.Code
	}{
		{"/loop", false, []screenshot.Code{screenshot.ETIMEOUT, screenshot.EUPSTREAM}},
		{"/loop-after-load", true, []screenshot.Code{screenshot.ETIMEOUT, screenshot.EUPSTREAM}},
		{"/memory", false, []screenshot.Code{screenshot.EUPSTREAM, screenshot.ETIMEOUT}},
		{"/memory-after-load", true, []screenshot.Code{screenshot.EUPSTREAM, screenshot.ETIMEOUT}},
		{"/tall", true, nil},
		{"/dialogs", true, nil},
		{"/popups", true, nil},
		{"/download", false, []screenshot.Code{screenshot.EUPSTREAM}},
		{"/download-link", true, nil},
		{"/forever", true, []screenshot.Code{screenshot.ETIMEOUT, screenshot.EUPSTREAM}},
		{"/trickle", false, []screenshot.Code{screenshot.ETIMEOUT}},
		{"TLS", false, []screenshot.Code{screenshot.EUPSTREAM}},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			u := site.URL + tc.path
			if tc.path == "TLS" {
				u = tlsSite.URL + "/"
			}
			start := time.Now()
			img, err := p.Render(context.Background(), opts(t, u))
			d := time.Since(start)
			if d > 12*time.Second {
				t.Errorf("took %s, past the deadline", d)
			}
			switch {
			case err == nil && !tc.ok:
				t.Errorf("rendered an image, want an error")
			case err == nil && len(img.Data) == 0:
				t.Error("empty image")
			case err != nil:
				code := screenshot.ErrorCode(err)
				if !containsCode(tc.codes, code) {
					t.Errorf("err = %v (%s), want one of %v", err, code, tc.codes)
				}
				if code == screenshot.EINTERNAL {
					t.Errorf("a hostile page caused an internal error: %v", err)
				}
			}
			if tc.path == "TLS" && err != nil && !strings.Contains(screenshot.ErrorMessage(err), "TLS") {
				t.Errorf("TLS error not named: %v", err)
			}
		})
	}

	// Navigations to local and internal schemes go nowhere: the page stays
	// (or the render fails); a local file never shows.
	for _, path := range []string{"/to-file", "/to-data", "/to-chrome", "/to-view-source"} {
		img, err := p.Render(context.Background(), opts(t, site.URL+path, "format", "png"))
		if err != nil {
			if code := screenshot.ErrorCode(err); code == screenshot.EINTERNAL {
				t.Errorf("%s: %v", path, err)
			}
			continue
		}
		dec, _, derr := image.Decode(bytes.NewReader(img.Data))
		if derr != nil {
			t.Fatal(derr)
		}
		if c := dec.At(10, 10); near(c, red, 10) {
			t.Errorf("%s: the page showed the local target", path)
		}
	}

	// A tall page: the viewport renders; a capture of the whole element is
	// refused clearly.
	_, err = p.Render(context.Background(), opts(t, site.URL+"/tall", "selector", "#tall"))
	if screenshot.ErrorCode(err) != screenshot.EUNPROCESSABLE || !strings.Contains(screenshot.ErrorMessage(err), "at most 16384") {
		t.Errorf("tall element: %v", err)
	}

	// Nothing was downloaded anywhere.
	filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "evil") {
			t.Errorf("a download was written: %s", path)
		}
		return nil
	})

	// Clean-up: one browser, only its first tab, no browser context left
	// but the spare.
	p.jobs.Wait()
	if st := p.Stats(); len(st) != 1 || !st[0].Ready {
		t.Fatalf("pool after the hostile pages: %+v", st)
	}
	bctx := p.list()[0].current().ctx
	deadline := time.Now().Add(5 * time.Second)
	for {
		targets, err := chromedp.Targets(bctx)
		if err != nil {
			t.Fatal(err)
		}
		contexts, err := chromedp.CallBrowser(bctx, target.GetBrowserContexts, cdp.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		pages := 0
		for _, ti := range targets {
			if ti.Type == "page" {
				pages++
			}
		}
		// What may stay is the one spare opened ahead for the next render:
		// its browser context, unused, and its blank tab.
		spare := p.list()[0].current().spares.spareContext()
		left := slices.DeleteFunc(slices.Clone(contexts.BrowserContextIDs), func(id cdp.BrowserContextID) bool { return id == spare })
		if pages <= 1+len(contexts.BrowserContextIDs)-len(left) && len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %d pages, browser contexts %v", pages, contexts.BrowserContextIDs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// And it still works, with the same browser, no more processes than
	// before, and no new temporary directories.
	if _, err := p.Render(context.Background(), opts(t, site.URL+"/")); err != nil {
		t.Fatalf("render after the hostile pages: %v", err)
	}
	p.jobs.Wait()
	if st := p.Stats()[0]; st.PID != pid {
		// A crashing page may not take the browser down; if it did, the
		// supervisor replaced it and the old processes must be gone.
		t.Logf("browser relaunched during the hostile pages: %d → %d", pid, st.PID)
	} else {
		deadline = time.Now().Add(10 * time.Second)
		for children(pid) > procsBefore && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if n := children(pid); n > procsBefore {
			t.Errorf("the browser has %d processes, %d before the hostile pages", n, procsBefore)
		}
	}
	if n := runnerDirs(); n > tmpBefore {
		t.Errorf("%d browser temp directories, %d before", n, tmpBefore)
	}
}

// children counts the processes descending from pid.
func children(pid int) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 {
			parent[p], _ = strconv.Atoi(fields[1])
		}
	}
	for p := range parent {
		for q := p; q > 1; q = parent[q] {
			if parent[q] == pid {
				n++
				break
			}
		}
	}
	return n
}

// runnerDirs counts the browsers' temporary profile directories.
func runnerDirs() int {
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "chromedp-runner*"))
	return len(m)
}

func containsCode(codes []screenshot.Code, c screenshot.Code) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}
