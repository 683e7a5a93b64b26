package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ConsentEngine is DuckDuckGo's autoconsent, the engine that answers
// consent dialogs of a few hundred consent platforms: its content script
// (the standalone build for automation tools) and its rules.
type ConsentEngine struct {
	Version string
	script  string // shim + content script + rules, injected in an isolated world
	Rules   int    // rules in the bundle
}

// consentWorld is the isolated world the engine runs in: the page's
// scripts cannot see or call it.
const consentWorld = "shutter-consent"

// consentBinding carries the engine's messages to the renderer.
const consentBinding = "__shutterConsent"

// LoadConsentEngine reads the engine from an unpacked npm package
// (dist/autoconsent.playwright.js and rules/compact-rules.json).
func LoadConsentEngine(dir string) (*ConsentEngine, error) {
	script, err := os.ReadFile(filepath.Join(dir, "dist", "autoconsent.playwright.js"))
	if err != nil {
		return nil, fmt.Errorf("consent engine: %w", err)
	}
	rules, err := os.ReadFile(filepath.Join(dir, "rules", "compact-rules.json"))
	if err != nil {
		return nil, fmt.Errorf("consent engine: %w", err)
	}
	var compact struct {
		R []json.RawMessage `json:"r"`
	}
	if err := json.Unmarshal(rules, &compact); err != nil || len(compact.R) == 0 {
		return nil, fmt.Errorf("consent engine: %s is not a rule bundle", filepath.Join(dir, "rules", "compact-rules.json"))
	}
	var pkg struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
		_ = json.Unmarshal(b, &pkg) // the version is only reported
	}
	init, _ := json.Marshal(map[string]any{
		"type": "initResp",
		"config": map[string]any{
			"enabled": true, "autoAction": "optOut", "disabledCmps": []string{}, "enablePrehide": true,
			"enableCosmeticRules": true, "enableGeneratedRules": true, "detectRetries": 20, "isMainWorld": false,
			"prehideTimeout": 2000, "enableHeuristicDetection": true, "enablePopupMutationObserver": false,
			"visualTest": false, "performanceLoggingEnabled": false, "heuristicPopupSearchTimeout": 0,
			"heuristicMode": "tier2",
			"logs": map[string]bool{"lifecycle": false, "rulesteps": false, "detectionsteps": false, "evals": false,
				"errors": false, "messages": false, "waits": false},
		},
		"rules": map[string]any{"autoconsent": []any{}, "compact": json.RawMessage(rules)},
	})
	// The shim gives the engine its send function (through the binding,
	// as JSON) and answers its "init" with the configuration and rules
	// right here, so the rules cross the DevTools connection once per
	// render, not once per frame.
	shim := fmt.Sprintf(`(() => {
	const init = %s;
	const send = globalThis[%q];
	globalThis.autoconsentSendMessage = (msg) => {
		if (msg && msg.type === "init") {
			setTimeout(() => globalThis.autoconsentReceiveMessage && globalThis.autoconsentReceiveMessage(init));
			return;
		}
		try { send(JSON.stringify(msg)); } catch (e) {}
	};
})();
`, init, consentBinding)
	return &ConsentEngine{Version: pkg.Version, script: shim + string(script), Rules: len(compact.R)}, nil
}

// consentState follows the engine through one render.
type consentState struct {
	mu       sync.Mutex
	detected bool // a consent platform is on the page
	popup    bool // its dialog is open
	done     bool // the engine finished: answered, failed, or found nothing
	changed  chan struct{}
}

func (c *consentState) update(f func()) {
	c.mu.Lock()
	f()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// consentSetup installs the engine in the tab before navigation.
func consentSetup(e *ConsentEngine) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		call(runtime.AddBinding, runtime.AddBindingParams{Name: consentBinding, ExecutionContextName: consentWorld}),
		call(page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: e.script, WorldName: consentWorld}),
	}
}

// consentMessage handles one message of the engine: evaluations it asks
// for in the page's main world, and its progress.
func (p *Pool) consentMessage(ctx context.Context, st *tab, ev *runtime.EventBindingCalled) {
	if ev.Name != consentBinding || st.consent == nil {
		return
	}
	var msg struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Code      string `json:"code"`
		MainFrame bool   `json:"mainFrame"`
		Result    bool   `json:"result"`
		State     struct {
			Lifecycle string `json:"lifecycle"`
		} `json:"state"`
	}
	if json.Unmarshal([]byte(ev.Payload), &msg) != nil {
		return
	}
	c := st.consent
	switch msg.Type {
	case "eval":
		// Rules that need the page's own globals (a platform's API).
		result, err := chromedp.Run(ctx, chromedp.Evaluate[any](msg.Code, awaitPromise))
		resp, _ := json.Marshal(map[string]any{"type": "evalResp", "id": msg.ID, "result": err == nil && truthy(result)})
		// The page may have gone; the engine times out an unanswered eval.
		_, _ = chromedp.Run(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[*runtime.RemoteObject]("autoconsentReceiveMessage("+string(resp)+")",
				func(p *runtime.EvaluateParams) { p.ContextID = ev.ExecutionContextID })(ctx, t)
			return err
		}))
	case "cmpDetected":
		c.update(func() { c.detected = true })
	case "popupFound":
		c.update(func() { c.detected, c.popup = true, true })
	case "optOutResult", "autoconsentDone", "autoconsentError":
		c.update(func() { c.done = true })
	case "report":
		if msg.MainFrame {
			switch msg.State.Lifecycle {
			case "nothingDetected", "optOutSucceeded", "optOutFailed", "optInSucceeded", "optInFailed":
				c.update(func() { c.done = true })
			}
		}
	}
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != ""
	default:
		return true
	}
}

// Bounds of the wait for the consent engine after load: how long it may
// look for a platform, and how long an answer may take once found.
const (
	consentLook   = 1500 * time.Millisecond
	consentAnswer = 6 * time.Second
)

// waitConsent waits until the engine has answered the dialog, found
// nothing, or run out of its time; then for what the answer loaded.
func (p *Pool) waitConsent(st *tab) func(ctx context.Context, t *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		c := st.consent
		start := time.Now()
		for {
			c.mu.Lock()
			detected, done, ch := c.detected, c.done, c.changed
			c.mu.Unlock()
			limit := consentLook
			if detected {
				limit = consentAnswer
			}
			wait := limit - time.Since(start)
			if done || wait <= 0 {
				break
			}
			select {
			case <-ctx.Done():
				return nil // the capture reports the deadline
			case <-ch:
			case <-time.After(wait):
			}
		}
		p.waitIdle(ctx, st)
		return nil
	}
}
