package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/testenv"
)

// TestOriginClientQuery sends the query string that the published client
// library of the specification's origin project sends for a default
// request: every parameter of the specification with the client's defaults
// spelled out, in its order, plus the three full_page parameters.
func TestOriginClientQuery(t *testing.T) {
	chrome := testenv.Chrome(t)
	site, _ := greenSite(t)
	env := environ{"PORT": "0", "METRICS_PORT": "0", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome,
		"ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error"}
	key := newKey(t, env, "--plan", "pro")
	m := startMain(t, env)

	raw := "api_key=" + url.QueryEscape(key) +
		"&block_ads=false&block_cookie_banners=false&block_trackers=false&bypass_csp=false&cache_ttl=3600" +
		"&device_scale_factor=1&format=jpeg&has_touch=false&height=1080&is_cached=false&is_landscape=false" +
		"&is_mobile=false&prefers_color_scheme=light&prefers_reduced_motion=no-preference&quality=80" +
		"&url=" + url.QueryEscape(site.URL) + "&width=1920" +
		"&full_page=false&full_page_scroll=true&full_page_scroll_duration=400"
	resp, body := getRaw(t, m, raw)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("default request of the client: %d %s", resp.StatusCode, body)
	}
	img, _, err := image.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds() != image.Rect(0, 0, 1920, 1080) {
		t.Errorf("bounds = %v, want 1920×1080", img.Bounds())
	}

	// The client sends arrays, and its playground line lists, as repeated
	// parameters.
	resp, body = getRaw(t, m, "api_key="+url.QueryEscape(key)+"&url="+url.QueryEscape(site.URL)+
		"&block_resources=font&block_resources=media&headers=X-A%3A+1&headers=X-B%3A+2&width=320&height=200")
	if resp.StatusCode != 200 {
		t.Errorf("repeated list parameters: %d %s", resp.StatusCode, body)
	}
	// A repeated scalar is still a typo to report.
	resp, body = getRaw(t, m, "api_key="+url.QueryEscape(key)+"&url="+url.QueryEscape(site.URL)+"&width=320&width=400")
	if resp.StatusCode != 400 {
		t.Errorf("repeated width: %d %s", resp.StatusCode, body)
	}
	// An unknown parameter too.
	resp, body = getRaw(t, m, "api_key="+url.QueryEscape(key)+"&url="+url.QueryEscape(site.URL)+"&full_pag=true")
	if resp.StatusCode != 400 || !bytes.Contains(body, []byte("full_pag")) {
		t.Errorf("unknown parameter: %d %s", resp.StatusCode, body)
	}

	strictHealth(t, get(t, "http://"+m.Addr+"/health"))
}

// TestHealthDegradedIsPassOrFail runs a server with one browser up and one
// down: the report is degraded, and every check says pass or fail.
func TestHealthDegradedIsPassOrFail(t *testing.T) {
	live := startRemoteBrowser(t)
	dead, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env := environ{"PORT": "0", "METRICS_PORT": "0", "DATA_DIR": t.TempDir(), "LOG_LEVEL": "error",
		"BROWSER_URLS": live + ",http://127.0.0.1:" + strconv.Itoa(dead)}
	m := startMain(t, env)
	body := get(t, "http://"+m.Addr+"/health")
	rep := strictHealth(t, body)
	if rep.Status != "degraded" {
		t.Errorf("status = %s, want degraded: %s", rep.Status, body)
	}
	for _, c := range rep.Checks {
		if c.Name == "browser" && (c.Status != "pass" || c.Error == "") {
			t.Errorf("browser check with one of two browsers down: %+v, want pass with the reason in error", c)
		}
	}
}

type healthReport struct {
	Status string `json:"status"`
	Checks []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"checks"`
}

// strictHealth validates a /health body as the origin project's client
// does: the report's status one of three values, each check's pass or fail.
func strictHealth(t *testing.T, body string) healthReport {
	t.Helper()
	var rep healthReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("health: %v: %s", err, body)
	}
	if !slices.Contains([]string{"healthy", "degraded", "unhealthy"}, rep.Status) {
		t.Errorf("report status %q", rep.Status)
	}
	for _, c := range rep.Checks {
		if c.Status != "pass" && c.Status != "fail" {
			t.Errorf("check %s: status %q, want pass or fail", c.Name, c.Status)
		}
	}
	return rep
}

func getRaw(t *testing.T, m *Main, rawQuery string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr + "/v1/screenshots/take?" + rawQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// startRemoteBrowser starts a headless shell with DevTools on a loopback
// port and returns its address.
func startRemoteBrowser(t *testing.T) string {
	t.Helper()
	chrome := testenv.Chrome(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "shutter-remote-*")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-quic", "--user-data-dir="+dir,
		"--remote-debugging-address=127.0.0.1", fmt.Sprintf("--remote-debugging-port=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	})
	addr := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(addr + "/json/version"); err == nil {
			resp.Body.Close()
			return addr
		}
	}
	t.Fatal("remote browser did not start")
	return ""
}

// TestHealthWithoutDetails: with HEALTH_DETAILS=false (the production
// default) the public report keeps names and statuses but no paths,
// process ids or browser addresses; the metrics port has them.
func TestHealthWithoutDetails(t *testing.T) {
	live := startRemoteBrowser(t)
	dead, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	deadURL := "http://127.0.0.1:" + strconv.Itoa(dead)
	env := environ{"PORT": "0", "METRICS_PORT": "0", "DATA_DIR": dir, "LOG_LEVEL": "error", "HEALTH_DETAILS": "false",
		"BROWSER_URLS": live + "," + deadURL}
	m := startMain(t, env)
	public := get(t, "http://"+m.Addr+"/health")
	rep := strictHealth(t, public)
	if rep.Status != "degraded" || len(rep.Checks) < 5 {
		t.Errorf("public report lost its statuses: %s", public)
	}
	for _, secret := range []string{dir, live, deadURL, `"pid"`, "connection refused"} {
		if strings.Contains(public, secret) {
			t.Errorf("public /health shows %q: %s", secret, public)
		}
	}
	if !strings.Contains(public, `"waiting"`) {
		t.Errorf("the queue check lost its counters: %s", public)
	}
	private := get(t, "http://"+m.MetricsAddr+"/health")
	for _, want := range []string{dir, live, deadURL} {
		if !strings.Contains(private, want) {
			t.Errorf("metrics-port /health lacks %q: %s", want, private)
		}
	}
}

// TestConsentEngineReported: /health says whether the consent engine is on.
func TestConsentEngineReported(t *testing.T) {
	dir := testenv.Autoconsent(t)
	for want, env := range map[string]environ{
		`"engine":"autoconsent"`: {"AUTOCONSENT_DIR": dir},
		`"engine":"off"`:         {"AUTOCONSENT_DIR": "off"},
	} {
		env["PORT"], env["METRICS_PORT"], env["DATA_DIR"], env["CHROME_PATH"], env["LOG_LEVEL"] = "0", "-1", t.TempDir(), testenv.Chrome(t), "error"
		m := startMain(t, env)
		if h := get(t, "http://"+m.Addr+"/health"); !strings.Contains(h, `"name":"consent","status":"pass"`) || !strings.Contains(h, want) {
			t.Errorf("health with AUTOCONSENT_DIR=%s: %s", env["AUTOCONSENT_DIR"], h)
		}
	}
}
