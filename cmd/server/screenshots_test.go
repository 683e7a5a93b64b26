package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

// TestDashboardScreenshots is `make screenshots`: the dashboard's main
// pages, with seeded data, taken by Shutter itself (the session cookie
// passed as the cookies parameter) into $SHUTTER_SCREENSHOTS. Without that
// variable it does nothing.
func TestDashboardScreenshots(t *testing.T) {
	out := os.Getenv("SHUTTER_SCREENSHOTS")
	if out == "" {
		t.Skip("make screenshots sets SHUTTER_SCREENSHOTS to the output directory")
	}
	chrome := testenv.Chrome(t)
	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATA_DIR": t.TempDir(), "CHROME_PATH": chrome, "ALLOW_PRIVATE_TARGETS": "true",
		"LOG_LEVEL": "error", "SIGNUP": "open"}
	m := startMain(t, env)
	ctx := context.Background()
	acc := m.accounts
	owner, token, err := acc.SignUp(ctx, "ada@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	shot, err := acc.CreateKey(ctx, account.NewKey{Name: "screenshots", Plan: screenshot.PlanEnterprise, OwnerID: owner.ID})
	if err != nil {
		t.Fatal(err)
	}
	featured := seed(t, m, owner)

	_, port, _ := net.SplitHostPort(m.Addr)
	base := "http://127.0.0.1:" + port
	for _, p := range []struct{ name, path, width, height, scheme string }{
		{"dashboard-keys", "/dashboard/", "1280", "860", "light"},
		{"dashboard-key", "/dashboard/keys/" + featured, "1280", "860", "light"},
		{"dashboard-usage", "/dashboard/usage", "1280", "860", "light"},
		{"dashboard-requests", "/dashboard/requests", "1280", "860", "light"},
		{"dashboard-playground", "/dashboard/playground", "1280", "860", "light"},
		{"dashboard-phone-dark", "/dashboard/usage", "390", "844", "dark"},
	} {
		q := url.Values{"api_key": {shot.Secret}, "url": {base + p.path}, "format": {"png"}, "width": {p.width}, "height": {p.height},
			"prefers_color_scheme": {p.scheme}, "cookies": {account.SessionCookieName(false) + "=" + token + "; Path=/"}}
		resp, err := http.Get(base + "/v1/screenshots/take?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		img, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", p.path, resp.StatusCode, img)
		}
		if err := os.WriteFile(filepath.Join(out, p.name+".png"), img, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", p.name, len(img))
	}
}

// seed gives the screenshots something to show: keys, 30 days of usage and
// a request log. It returns the id of the first key.
func seed(t *testing.T, m *Main, owner *account.User) (first string) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	hosts := []string{"example.com", "blog.example.com", "shop.example.com", "docs.example.org"}
	for i, n := range []account.NewKey{
		{Name: "marketing-site", Plan: screenshot.PlanPro, Domains: []string{"example.com", "*.example.com"}, OwnerID: owner.ID},
		{Name: "docs-previews", Plan: screenshot.PlanFree, Domains: []string{"docs.example.org"}, RequireSignature: true, OwnerID: owner.ID},
	} {
		c, err := m.accounts.CreateKey(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = c.Key.ID
		}
		var days []account.Day
		today := time.Now().UTC().Truncate(24 * time.Hour)
		for d := 29; d >= 0; d-- {
			day := account.Day{KeyID: c.Key.ID, Date: today.AddDate(0, 0, -d).Format(time.DateOnly),
				Succeeded: int64(rnd.IntN(20) + 5*(2-i)), CacheHits: int64(rnd.IntN(30)), Failed: int64(rnd.IntN(3)), Refused: int64(rnd.IntN(2))}
			day.Bytes = (day.Succeeded + day.CacheHits) * 180_000
			days = append(days, day)
		}
		if err := m.store.AddUsage(ctx, days); err != nil {
			t.Fatal(err)
		}
		var reqs []account.Request
		for j := range 12 {
			status := []int{200, 200, 200, 200, 429, 200, 502, 200}[j%8]
			reqs = append(reqs, account.Request{KeyID: c.Key.ID, At: time.Now().Add(-time.Duration(j*7) * time.Minute), Status: status,
				DurationMS: int64(180 + rnd.IntN(400)), Host: hosts[(i*2+j)%len(hosts)], Format: []string{"jpeg", "png", "webp"}[j%3],
				Cached: j%3 == 0 && status == 200, RequestID: fmt.Sprintf("%016x%08x", rnd.Uint64(), rnd.Uint32())})
		}
		if err := m.store.AddRequests(ctx, reqs, 1000); err != nil {
			t.Fatal(err)
		}
		used := 0
		for _, d := range days {
			if d.Date[:7] == time.Now().UTC().Format("2006-01") {
				used += int(d.Succeeded)
			}
		}
		period, _ := screenshot.PeriodOf(time.Now())
		for range min(used, 200) {
			h, err := m.store.Reserve(ctx, c.Key.ID, period, 0, time.Minute)
			if err == nil {
				m.store.Commit(ctx, h)
			}
		}
	}
	return first
}
