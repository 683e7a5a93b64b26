package chromium

import (
	"fmt"
	"image/color"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/testenv"
)

// consentPages imitate five consent platforms: their markup, and where the
// engine looks for them, their script globals. Each dialog covers the page
// in its own colour and locks scrolling; its reject and accept buttons
// report the choice to the server, close the dialog and unlock the page.
var consentPages = map[string]struct{ markup, script string }{
	"onetrust": {`<div id="onetrust-consent-sdk"><div id="onetrust-banner-sdk" class="dialog">
<button id="onetrust-accept-btn-handler" data-choice="accept">Accept All</button>
<button id="onetrust-reject-all-handler" data-choice="reject">Reject All</button></div></div>`, ``},
	"cookiebot": {`<div id="CybotCookiebotDialog" class="dialog">
<button id="CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll" data-choice="accept">Allow all</button>
<button id="CybotCookiebotDialogBodyLevelButtonLevelOptinDeclineAll" data-choice="reject">Deny</button></div>`,
		`window.Cookiebot = { hasResponse: false, dialog: { visible: true },
  withdraw() { choose("reject"); }, hide() { document.getElementById("CybotCookiebotDialog").remove(); } };`},
	"didomi": {`<div id="didomi-host"><div id="didomi-notice" class="dialog">
<button id="didomi-notice-agree-button" data-choice="accept">Agree</button>
<button id="didomi-notice-disagree-button" data-choice="reject">Disagree</button></div></div>`, ``},
	"quantcast": {`<div id="qc-cmp2-container"><div id="qc-cmp2-ui" class="dialog">
<div class="qc-cmp2-summary-buttons"><button mode="primary" data-choice="accept">AGREE</button>
<button id="disagree-btn" mode="secondary" data-choice="reject">DISAGREE</button></div></div></div>`, ``},
	"usercentrics": {`<div id="usercentrics-button"><div class="dialog">
<button id="uc-btn-accept-banner" data-choice="accept">Accept</button>
<button id="uc-btn-deny-banner" data-choice="reject">Deny</button></div></div>`, ``},
}

const consentPage = `<!doctype html><html><head><style>
html, body { margin: 0; background: #fff; }
body.locked { overflow: hidden; }
.dialog { position: fixed; inset: 0; background: #ff00ff; z-index: 1000; }
.dialog button { display: inline-block; width: 120px; height: 40px; margin: 20px; }
#tall { height: 3000px; }
</style></head><body class="locked"><div id="tall"></div>MARKUP<script>
function choose(c) {
	fetch("/choice?c=" + c);
	document.body.classList.remove("locked");
	for (const d of document.querySelectorAll(".dialog")) d.remove();
}
for (const b of document.querySelectorAll("[data-choice]")) b.addEventListener("click", () => choose(b.dataset.choice));
SCRIPT
</script></body></html>`

// TestConsentEngineAnswersDialogs: with block_cookie_banners the engine
// finds each platform's dialog and rejects: the page's reject handler is
// what runs, the dialog is gone from the image, the page scrolls again.
func TestConsentEngineAnswersDialogs(t *testing.T) {
	engine, err := LoadConsentEngine(testenv.Autoconsent(t))
	if err != nil {
		t.Fatal(err)
	}
	if engine.Rules < 100 {
		t.Fatalf("%d rules", engine.Rules)
	}
	var mu sync.Mutex
	choices := map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cmp := strings.TrimPrefix(r.URL.Path, "/")
		if r.URL.Path == "/choice" {
			ref := r.Header.Get("Referer")
			cmp = ref[strings.LastIndex(ref, "/")+1:]
			mu.Lock()
			choices[cmp] = append(choices[cmp], r.URL.Query().Get("c"))
			mu.Unlock()
			return
		}
		pg, ok := consentPages[cmp]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, strings.NewReplacer("MARKUP", pg.markup, "SCRIPT", pg.script).Replace(consentPage))
	}))
	defer srv.Close()
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 20 * time.Second, Consent: engine})
	if err != nil {
		t.Fatal(err)
	}
	magenta, white := color.RGBA{255, 0, 255, 255}, color.RGBA{255, 255, 255, 255}
	for cmp := range consentPages {
		t.Run(cmp, func(t *testing.T) {
			// Off: the dialog covers the page and nobody chose.
			img := render(t, p, opts(t, srv.URL+"/"+cmp, "format", "png", "width", "600", "height", "400"))
			if c := img.At(300, 300); !near(c, magenta, 0) {
				t.Errorf("off: pixel %v, want the dialog", c)
			}
			// On: the engine rejects.
			o := opts(t, srv.URL+"/"+cmp, "format", "png", "width", "600", "height", "400", "block_cookie_banners", "true",
				"scripts", `if (document.body.classList.contains("locked") || (scrollTo(0, 500), scrollY !== 500)) throw new Error("not scrollable"); scrollTo(0, 0)`)
			img = render(t, p, o)
			if c := img.At(300, 300); !near(c, white, 0) {
				t.Errorf("on: pixel %v, want the page", c)
			}
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			got := fmt.Sprint(choices[cmp])
			mu.Unlock()
			if got != "[reject]" {
				t.Errorf("choices reported by the page: %s, want [reject]", got)
			}
		})
	}
}
