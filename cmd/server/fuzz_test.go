package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/testenv"
)

// FuzzTake sends fuzzed queries through the whole request path of a real
// server with a real browser: parser, key, limits, policy, queue, render,
// response. No answer may be a 500, and every error is the JSON error
// object. The target is always the test's own page on 127.0.0.1 and the
// server refuses every other address (ALLOWED_TARGETS_ONLY), so nothing a
// fuzzed page does leaves the machine.
func FuzzTake(f *testing.F) {
	chrome := testenv.Chrome(f)
	site := testenv.HTMLServer(f, `<!doctype html><body style="background:#0f0"><p id="a" class="b">fuzz</p>
<img src="/img.png"><script>document.title = location.search</script></body>`)
	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATA_DIR": f.TempDir(), "CHROME_PATH": chrome, "LOG_LEVEL": "error",
		"ALLOWED_PRIVATE_TARGETS": "127.0.0.1", "ALLOWED_TARGETS_ONLY": "true",
		"SCREENSHOT_TIMEOUT": "4000", "MAX_PAGE_LOAD_TIMEOUT": "3000", "PLAN_PRO_RATE_LIMIT": "1000000"}
	key := newKey(f, env, "--plan", "pro")
	m := startMain(f, env)

	for _, s := range []string{
		"format=png&width=320&height=200",
		"full_page=true&full_page_scroll_duration=0&image_width=50",
		"clip_x=0&clip_y=0&clip_width=10&clip_height=10&format=webp&omit_background=true",
		"format=pdf&pdf_paper_format=letter&pdf_landscape=true",
		"wait_until=networkidle2&wait_for_selector=%23a&click=.b&hide_selectors=p&styles=p{color:red}",
		"scripts=throw%201&time_zone=Asia/Tokyo&media_type=print",
		"cookies=a=b;%20Path=rel",
		"headers=X-A:%201&block_resources=image&block_requests=*.png&is_cached=true&cache_key=k",
		"selector=%23missing&delay=0",
		"url=http://127.0.0.1:99999/",
		"device_scale_factor=3&width=3840&height=2160&image_height=10",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		// The target stays the test's page; the fuzzer keeps the path.
		target := site.URL + "/"
		if u, err := url.Parse(q.Get("url")); err == nil && u.Path != "" && !strings.Contains(u.Path, "..") {
			target = site.URL + "/" + strings.TrimLeft(u.EscapedPath(), "/")
		}
		if q.Get("url") == "http://127.0.0.1:99999/" {
			target = q.Get("url")
		}
		q.Set("url", target)
		if q.Get("api_key") == "" {
			q.Set("api_key", key)
		}
		client := &http.Client{Timeout: 20 * time.Second} // a render is bounded by 4 s, the queue wait by 10 s
		resp, err := client.Get("http://" + m.Addr + "/v1/screenshots/take?" + q.Encode())
		if err != nil {
			t.Fatalf("%s: %v", q.Encode(), err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		// 502, 503 and 504 are the page's or the machine's doing (a fuzzed
		// script may crash its renderer or run out the clock); a 500 is ours.
		if resp.StatusCode == http.StatusInternalServerError {
			t.Fatalf("%d for %s: %s", resp.StatusCode, q.Encode(), body)
		}
		if resp.StatusCode != 200 && resp.StatusCode != 304 {
			var e struct{ Error, RequestID string }
			if json.Unmarshal(body, &e) != nil || e.Error == "" || e.RequestID == "" {
				t.Fatalf("%d without the error object for %s: %s", resp.StatusCode, q.Encode(), body)
			}
		}
	})
}
