package main

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shutterhq/shutter/internal/testenv"
)

// TestDiskFull runs the embedded default on a small tmpfs, fills it, and
// checks that clients get images or 503s (never a 500), cached entries stay
// whole, usage counts exactly the renders that succeeded, and service
// resumes when space is back.
func TestDiskFull(t *testing.T) {
	chrome := testenv.Chrome(t)
	data := filepath.Join(t.TempDir(), "data")
	os.MkdirAll(data, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", data).CombinedOutput(); err != nil {
		testenv.Missing(t, "a tmpfs mount (root)", &mountError{string(out)})
	}
	defer exec.Command("umount", "-l", data).Run()

	site, _ := greenSite(t)
	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATA_DIR": data, "CHROME_PATH": chrome,
		"ALLOW_PRIVATE_TARGETS": "true", "LOG_LEVEL": "error"}
	key := newKey(t, env, "--plan", "pro")
	m := startMain(t, env)
	q := func(kv ...string) url.Values {
		v := url.Values{"api_key": {key}, "url": {site.URL}, "format": {"png"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	renders := 0
	count := func(resp *http.Response) {
		if resp.StatusCode == 200 && resp.Header.Get("X-Cache") != "HIT" {
			renders++
		}
	}
	resp, cached := take(t, m, q("is_cached", "true"))
	if resp.StatusCode != 200 {
		t.Fatalf("before: %d", resp.StatusCode)
	}
	count(resp)

	// Fill the disk.
	filler := filepath.Join(data, "filler")
	f, _ := os.Create(filler)
	chunk := bytes.Repeat([]byte{1}, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()

	for i, v := range []url.Values{q(), q("is_cached", "true"), q("is_cached", "true", "cache_key", "new"), q("is_cached", "true", "cache_key", "new")} {
		resp, body := take(t, m, v)
		count(resp)
		t.Logf("disk full: %v → %d %s", v.Get("cache_key"), resp.StatusCode, resp.Header.Get("X-Cache"))
		switch resp.StatusCode {
		case 200:
			if v.Get("cache_key") == "" && v.Get("is_cached") == "true" && !bytes.Equal(body, cached) {
				t.Errorf("request %d: a cached entry changed", i)
			}
		case 503:
			if resp.Header.Get("Retry-After") == "" {
				t.Errorf("request %d: 503 without Retry-After", i)
			}
		default:
			t.Errorf("request %d with the disk full: %d %s", i, resp.StatusCode, body)
		}
	}
	if h := get(t, "http://"+m.Addr+"/health"); !strings.Contains(h, `"name":"storage","status":"fail"`) {
		t.Errorf("health with the disk full: %s", h)
	}

	// Space is back: service resumes, and usage counts exactly the renders.
	os.Remove(filler)
	for _, v := range []url.Values{q(), q("is_cached", "true", "cache_key", "after")} {
		resp, body := take(t, m, v)
		if resp.StatusCode != 200 {
			t.Fatalf("after space came back: %d %s", resp.StatusCode, body)
		}
		count(resp)
	}
	list := cli(t, env, "keys", "list")
	if !strings.Contains(list, " "+itoa(renders)+"/1000") {
		t.Errorf("usage after the disk was full: want %d renders counted:\n%s", renders, list)
	}
}

type mountError struct{ out string }

func (e *mountError) Error() string { return "mount: " + e.out }

func itoa(n int) string { return strconv.Itoa(n) }
