package chromium

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

// optionSite serves the pages of the capture-option tests.
func optionSite(t *testing.T) *httptest.Server {
	t.Helper()
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, body)
		}
	}
	mux := http.NewServeMux()
	// 3000 px tall: white, with a blue last 100 px.
	mux.Handle("/tall", html(`<!doctype html><body style="margin:0">
<div style="height:2900px;background:#fff"></div><div style="height:100px;background:#00f"></div></body>`))
	// A section 2000 px down paints green only once it has been in view.
	mux.Handle("/lazy", html(`<!doctype html><body style="margin:0">
<div style="height:2000px"></div><div id="lazy" style="height:600px;background:#fff"></div>
<script>new IntersectionObserver((es) => { for (const e of es) if (e.isIntersecting) e.target.style.background = "#008000"; })
.observe(document.getElementById("lazy"));</script></body>`))
	mux.Handle("/late", html(`<!doctype html><body style="margin:0;background:#fff">
<script>setTimeout(() => { const d = document.createElement("div"); d.id = "late";
d.style.cssText = "position:fixed;inset:0;background:#f00"; document.body.append(d); }, 1500);</script></body>`))
	mux.Handle("/paint-later", html(`<!doctype html><body style="margin:0;background:#fff">
<script>setTimeout(() => { document.body.style.background = "#00f"; }, 1000);</script></body>`))
	mux.Handle("/box", html(`<!doctype html><body style="margin:0;background:#fff">
<div class="ad" style="position:fixed;inset:0;background:#f00"></div></body>`))
	mux.Handle("/plain", html(`<!doctype html><body style="margin:0"><p>Shutter prints this page</p></body>`))
	mux.Handle("/print", html(`<!doctype html><style>body{margin:0;background:#fff} @media print { body { background: #f00 } }</style><body></body>`))
	mux.Handle("/tz", html(`<!doctype html><body style="margin:0;background:#fff"><script>
if (Intl.DateTimeFormat().resolvedOptions().timeZone === "Asia/Tokyo" && new Date().getTimezoneOffset() === -540)
	document.body.style.background = "#008000";</script></body>`))
	mux.Handle("/click", html(`<!doctype html><body style="margin:0;background:#fff">
<button id="go" style="position:absolute;top:1500px;left:10px;width:100px;height:40px"
onclick="document.body.style.background='#008000'">Accept</button></body>`))
	// The load event waits for an image that takes 1.5 s.
	mux.Handle("/slow-image", html(`<!doctype html><body style="margin:0;background:#fff">
<img src="/slow.png" style="position:fixed;inset:0;width:100%;height:100%"></body>`))
	mux.HandleFunc("/slow.png", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1500 * time.Millisecond)
		w.Header().Set("Content-Type", "image/png")
		w.Write(solidPNG(t, color.RGBA{255, 0, 0, 255}))
	})
	// After load, a fetch that answers after 2.5 s paints the page.
	mux.Handle("/fetch-later", html(`<!doctype html><body style="margin:0;background:#fff"><script>
addEventListener("load", () => fetch("/slow-data").then((r) => r.text()).then((c) => { document.body.style.background = c; }));
</script></body>`))
	mux.HandleFunc("/slow-data", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2500 * time.Millisecond)
		io.WriteString(w, "#00f")
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func solidPNG(t *testing.T, c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range 16 {
		img.Set(i%4, i/4, c)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Error(err)
	}
	return buf.Bytes()
}

// pixelAt renders a 200×100 PNG of target with the options kv and returns
// its centre pixel.
func pixelAt(t *testing.T, p *Pool, target string, kv ...string) color.Color {
	t.Helper()
	img := render(t, p, opts(t, target, append([]string{"format", "png", "width", "200", "height", "100"}, kv...)...))
	return img.At(100, 50)
}

func renderErr(t *testing.T, p *Pool, o *screenshot.Options) error {
	t.Helper()
	_, err := p.Render(context.Background(), o)
	return err
}

func TestFullPage(t *testing.T) {
	p := pool(t)
	s := optionSite(t)
	for _, dsf := range []string{"1", "2"} {
		t.Run("dsf "+dsf, func(t *testing.T) {
			o := opts(t, s.URL+"/tall", "format", "png", "width", "400", "height", "300", "full_page", "true", "device_scale_factor", dsf)
			res, err := p.Render(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			img, _, err := image.Decode(bytes.NewReader(res.Data))
			if err != nil {
				t.Fatal(err)
			}
			f := int(o.DeviceScaleFactor)
			if img.Bounds() != image.Rect(0, 0, 400*f, 3000*f) || res.Truncated {
				t.Fatalf("bounds = %v truncated %v, want 400×3000 ×%d", img.Bounds(), res.Truncated, f)
			}
			if c := img.At(200*f, 3000*f-5); !near(c, blue, 0) {
				t.Errorf("bottom pixel = %v, want blue", c)
			}
			if c := img.At(200*f, 100*f); !near(c, white, 0) {
				t.Errorf("top pixel = %v, want white", c)
			}
		})
	}
	t.Run("cut at full_page_max_height", func(t *testing.T) {
		o := opts(t, s.URL+"/tall", "format", "png", "width", "400", "height", "300", "full_page", "true", "full_page_max_height", "1000")
		res, err := p.Render(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		img, _, _ := image.Decode(bytes.NewReader(res.Data))
		if img.Bounds() != image.Rect(0, 0, 400, 1000) || !res.Truncated {
			t.Fatalf("bounds = %v truncated %v, want 400×1000 truncated", img.Bounds(), res.Truncated)
		}
	})
	t.Run("viewport without full_page", func(t *testing.T) {
		img := render(t, p, opts(t, s.URL+"/tall", "format", "png", "width", "400", "height", "300"))
		if img.Bounds() != image.Rect(0, 0, 400, 300) {
			t.Fatalf("bounds = %v", img.Bounds())
		}
	})
}

func TestFullPageScrollLoadsLazyContent(t *testing.T) {
	p := pool(t)
	s := optionSite(t)
	at := func(scroll string) color.Color {
		img := render(t, p, opts(t, s.URL+"/lazy", "format", "png", "width", "400", "height", "300", "full_page", "true",
			"full_page_scroll", scroll, "full_page_scroll_duration", "200"))
		if img.Bounds().Dy() != 2600 {
			t.Fatalf("bounds = %v", img.Bounds())
		}
		return img.At(200, 2300)
	}
	if c := at("true"); !near(c, green, 0) {
		t.Errorf("with full_page_scroll: %v, want the lazy section's green", c)
	}
	if c := at("false"); !near(c, white, 0) {
		t.Errorf("without full_page_scroll: %v, want white (the section never came into view)", c)
	}
}

func TestClip(t *testing.T) {
	p := pool(t)
	s := optionSite(t)
	img := render(t, p, opts(t, s.URL+"/tall", "format", "png", "width", "400", "height", "300",
		"clip_x", "10", "clip_y", "2920", "clip_width", "120", "clip_height", "60"))
	if img.Bounds() != image.Rect(0, 0, 120, 60) {
		t.Fatalf("bounds = %v", img.Bounds())
	}
	if c := img.At(60, 30); !near(c, blue, 0) {
		t.Errorf("clip below the fold = %v, want blue", c)
	}
	img = render(t, p, opts(t, s.URL+"/tall", "format", "png", "full_page", "true", "device_scale_factor", "2",
		"clip_x", "0", "clip_y", "2850", "clip_width", "50", "clip_height", "100"))
	if img.Bounds() != image.Rect(0, 0, 100, 200) {
		t.Fatalf("with full_page and dsf 2: bounds = %v", img.Bounds())
	}
	if top, bottom := img.At(50, 20), img.At(50, 180); !near(top, white, 0) || !near(bottom, blue, 0) {
		t.Errorf("clip across the edge: top %v bottom %v", top, bottom)
	}
}

func TestWaits(t *testing.T) {
	p := pool(t)
	s := optionSite(t)
	t.Run("wait_for_selector", func(t *testing.T) {
		if c := pixelAt(t, p, s.URL+"/late", "wait_for_selector", "#late"); !near(c, red, 0) {
			t.Errorf("pixel = %v, want the late element's red", c)
		}
	})
	t.Run("delay", func(t *testing.T) {
		if c := pixelAt(t, p, s.URL+"/paint-later", "delay", "2"); !near(c, blue, 0) {
			t.Errorf("pixel = %v, want blue painted after 1 s", c)
		}
		if c := pixelAt(t, p, s.URL+"/paint-later"); !near(c, white, 0) {
			t.Errorf("without delay: %v, want white", c)
		}
	})
	t.Run("wait_until", func(t *testing.T) {
		for _, tc := range []struct {
			path, until string
			want        color.RGBA
		}{
			{"/slow-image", "load", red},
			{"/slow-image", "domcontentloaded", white},
			{"/fetch-later", "networkidle0", blue},
			{"/fetch-later", "networkidle2", white}, // one request in flight is "almost idle"
		} {
			if c := pixelAt(t, p, s.URL+tc.path, "wait_until", tc.until); !near(c, tc.want, 0) {
				t.Errorf("%s with wait_until=%s: %v, want %v", tc.path, tc.until, c, tc.want)
			}
		}
	})
	t.Run("wait_for_selector that never matches", func(t *testing.T) {
		short, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = renderErr(t, short, opts(t, s.URL+"/plain", "wait_for_selector", "#never"))
		if screenshot.ErrorCode(err) != screenshot.EUNPROCESSABLE || !strings.Contains(err.Error(), "#never") {
			t.Errorf("err = %v, want 422 naming the selector", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %s, past the render timeout", d)
		}
		err = renderErr(t, short, opts(t, s.URL+"/plain", "wait_for_selector", "##bad"))
		if screenshot.ErrorCode(err) != screenshot.EINVALID {
			t.Errorf("invalid selector: %v, want 400", err)
		}
	})
}

func TestInteractions(t *testing.T) {
	p := pool(t)
	s := optionSite(t)
	px := func(path string, kv ...string) color.Color { return pixelAt(t, p, s.URL+path, kv...) }
	if c := px("/box"); !near(c, red, 0) {
		t.Fatalf("box = %v, want red", c)
	}
	if c := px("/box", "hide_selectors", "#nothing\n.ad"); !near(c, white, 0) {
		t.Errorf("hide_selectors: %v, want white", c)
	}
	if c := px("/plain", "styles", "body { background: #00f !important }"); !near(c, blue, 0) {
		t.Errorf("styles: %v, want blue", c)
	}
	if c := px("/plain", "scripts", "document.body.style.background = '#008000'"); !near(c, green, 0) {
		t.Errorf("scripts: %v, want green", c)
	}
	if c := px("/plain", "scripts", "new Promise((r) => setTimeout(() => { document.body.style.background = '#00f'; r(); }, 500))"); !near(c, blue, 0) {
		t.Errorf("scripts with a promise: %v, want blue", c)
	}
	if c := px("/click", "click", "#go"); !near(c, green, 0) {
		t.Errorf("click: %v, want green", c)
	}
	for _, tc := range []struct {
		kv   []string
		code screenshot.Code
	}{
		{[]string{"scripts", "throw new Error('nope')"}, screenshot.EUNPROCESSABLE},
		{[]string{"click", "#missing"}, screenshot.EUNPROCESSABLE},
		{[]string{"hide_selectors", "p\n:::x"}, screenshot.EINVALID},
	} {
		err := renderErr(t, p, opts(t, s.URL+"/plain", tc.kv...))
		if screenshot.ErrorCode(err) != tc.code {
			t.Errorf("%v: %v, want %s", tc.kv, err, tc.code)
		}
	}
}

func TestEmulation(t *testing.T) {
	p := pool(t)
	s := optionSite(t)
	t.Run("omit_background", func(t *testing.T) {
		for _, f := range []string{"png", "webp"} {
			img := render(t, p, opts(t, s.URL+"/plain", "format", f, "width", "200", "height", "100", "omit_background", "true"))
			if _, _, _, a := img.At(150, 80).RGBA(); a != 0 {
				t.Errorf("%s: alpha = %d, want 0", f, a)
			}
			img = render(t, p, opts(t, s.URL+"/plain", "format", f, "width", "200", "height", "100"))
			if _, _, _, a := img.At(150, 80).RGBA(); a != 0xffff {
				t.Errorf("%s without omit_background: alpha = %d", f, a)
			}
		}
	})
	t.Run("media_type", func(t *testing.T) {
		if c := pixelAt(t, p, s.URL+"/print", "media_type", "print"); !near(c, red, 0) {
			t.Errorf("print: %v, want red", c)
		}
		if c := pixelAt(t, p, s.URL+"/print"); !near(c, white, 0) {
			t.Errorf("screen: %v, want white", c)
		}
	})
	t.Run("time_zone", func(t *testing.T) {
		if c := pixelAt(t, p, s.URL+"/tz", "time_zone", "Asia/Tokyo"); !near(c, green, 0) {
			t.Errorf("Asia/Tokyo: %v, want green", c)
		}
		if c := pixelAt(t, p, s.URL+"/tz", "time_zone", "Europe/Berlin"); !near(c, white, 0) {
			t.Errorf("Europe/Berlin: %v, want white", c)
		}
	})
}

func TestThumbnails(t *testing.T) {
	p := pool(t)
	s := newSite(t, map[string]string{"/": boxPage})
	for _, tc := range []struct {
		kv   []string
		want image.Rectangle
	}{
		{[]string{"image_width", "320"}, image.Rect(0, 0, 320, 180)},
		{[]string{"image_height", "90"}, image.Rect(0, 0, 160, 90)},
		{[]string{"image_width", "200", "image_height", "200"}, image.Rect(0, 0, 200, 200)},
		{[]string{"image_width", "300", "image_height", "100", "device_scale_factor", "2"}, image.Rect(0, 0, 300, 100)},
		{[]string{"image_width", "100", "full_page", "true"}, image.Rect(0, 0, 100, 56)},
		{[]string{"image_width", "50", "selector", "#box"}, image.Rect(0, 0, 50, 25)},
	} {
		for _, f := range []string{"png", "jpeg", "webp"} {
			img := render(t, p, opts(t, s.URL, append([]string{"format", f, "width", "1280", "height", "720"}, tc.kv...)...))
			if img.Bounds() != tc.want {
				t.Errorf("%s %v: bounds %v, want %v", f, tc.kv, img.Bounds(), tc.want)
			}
		}
	}
	// The thumbnail shows the page: the box (CSS 30..230 × 40..140) at a
	// quarter of its size.
	img := render(t, p, opts(t, s.URL, "format", "png", "width", "1280", "height", "720", "image_width", "320"))
	if c := img.At(32, 22); !near(c, blue, 40) {
		t.Errorf("box in the thumbnail = %v, want blue", c)
	}
}

func TestPDF(t *testing.T) {
	p := pool(t)
	s := optionSite(t)
	res, err := p.Render(context.Background(), opts(t, s.URL+"/plain", "format", "pdf", "pdf_paper_format", "letter"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(res.Data, []byte("%PDF")) || res.Format.ContentType() != "application/pdf" {
		t.Fatalf("not a PDF: %q", res.Data[:min(len(res.Data), 16)])
	}
	pdftotext, err := exec.LookPath("pdftotext")
	if err != nil {
		testenv.Missing(t, "pdftotext (poppler-utils)", err)
		return
	}
	path := filepath.Join(t.TempDir(), "page.pdf")
	if err := os.WriteFile(path, res.Data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pdftotext, "-layout", path, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "Shutter prints this page") {
		t.Errorf("pdftotext read %q", out)
	}
	info, _ := exec.Command(filepath.Join(filepath.Dir(pdftotext), "pdfinfo"), path).Output()
	if !strings.Contains(string(info), "612 x 792 pts (letter)") {
		t.Errorf("paper: %s", info)
	}
}

// TestFonts renders scripts that need more than a Latin font: each must
// draw real glyphs, different from each other and from the missing-glyph
// box that a machine without the fonts draws for all of them.
func TestFonts(t *testing.T) {
	p := pool(t)
	texts := map[string]string{
		"cjk 1": "中", "cjk 2": "語", "japanese": "あ", "korean": "한",
		"emoji 1": "😀", "emoji 2": "🚀", "arabic": "مرحبا", "hindi": "नमस्ते", "thai": "สวัสดี",
		"missing": "\U0010FFFD", // a private-use code point: no font has it
	}
	routes := map[string]string{}
	for name, text := range texts {
		routes["/"+strings.ReplaceAll(name, " ", "-")] = `<!doctype html><meta charset="utf-8"><body style="margin:0;background:#fff">
<span style="font-size:64px;line-height:1;color:#000">` + text + `</span></body>`
	}
	s := newSite(t, routes)
	shots := map[string][]byte{}
	for name := range texts {
		res, err := p.Render(context.Background(), opts(t, s.URL+"/"+strings.ReplaceAll(name, " ", "-"), "format", "png", "width", "320", "height", "100"))
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := image.Decode(bytes.NewReader(res.Data))
		if err != nil {
			t.Fatal(err)
		}
		var pix []byte
		inked := 0
		for y := range 100 {
			for x := range 320 {
				r, g, b, _ := img.At(x, y).RGBA()
				pix = append(pix, byte(r>>8), byte(g>>8), byte(b>>8))
				if r>>8 < 128 || g>>8 < 128 || b>>8 < 128 {
					inked++
				}
			}
		}
		if inked < 50 {
			t.Errorf("%s: almost nothing drawn (%d pixels)", name, inked)
		}
		shots[name] = pix
	}
	for a := range texts {
		for b := range texts {
			if a < b && bytes.Equal(shots[a], shots[b]) {
				t.Errorf("%s and %s render the same pixels: a font is missing", a, b)
			}
		}
	}
}
