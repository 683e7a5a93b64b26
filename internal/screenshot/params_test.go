package screenshot

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

func parse(t testing.TB, query string) (*Options, string, error) {
	t.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("bad test query %q: %v", query, err)
	}
	return NewParser(DefaultLimits).Parse(q)
}

func TestParseDefaults(t *testing.T) {
	o, key, err := parse(t, "api_key=k1&url=https://Example.COM/a?b=1")
	if err != nil {
		t.Fatal(err)
	}
	if key != "k1" {
		t.Errorf("key = %q", key)
	}
	want := Options{URL: "https://example.com/a?b=1", Width: 1280, Height: 720, DeviceScaleFactor: 1,
		Format: JPEG, Quality: 80, ColorScheme: "light", ReducedMotion: "no-preference", CacheTTL: time.Hour}
	if o.URL != want.URL || o.Width != want.Width || o.Height != want.Height || o.DeviceScaleFactor != 1 ||
		o.Format != want.Format || o.Quality != 80 || o.ColorScheme != "light" || o.ReducedMotion != "no-preference" ||
		o.CacheTTL != time.Hour || o.IsMobile || o.Cached || o.BypassCSP {
		t.Errorf("defaults = %+v", o)
	}
}

func TestParseLimitsFromSettings(t *testing.T) {
	p := NewParser(Limits{DefaultWidth: 800, DefaultHeight: 600, MaxWidth: 1000, MaxHeight: 900})
	o, _, err := p.Parse(url.Values{"api_key": {"k"}, "url": {"http://a.example"}})
	if err != nil || o.Width != 800 || o.Height != 600 {
		t.Fatalf("defaults from settings: %+v %v", o, err)
	}
	if _, _, err := p.Parse(url.Values{"api_key": {"k"}, "url": {"http://a.example"}, "width": {"1001"}}); err == nil ||
		!strings.Contains(err.Error(), "from 100 to 1000") {
		t.Fatalf("MAX_SCREENSHOT_WIDTH not applied: %v", err)
	}
}

func TestParseAll(t *testing.T) {
	q := url.Values{
		"api_key": {"k"}, "url": {"http://www.x.example"}, "width": {"3840"}, "height": {"100"},
		"is_mobile": {"true"}, "is_landscape": {"true"}, "has_touch": {"true"}, "device_scale_factor": {"1.5"},
		"user_agent": {"UA/1"}, "format": {"webp"}, "quality": {"20"}, "selector": {"#a > b"},
		"block_ads": {"true"}, "block_cookie_banners": {"true"}, "block_trackers": {"true"},
		"block_requests": {"*.png\n\n https://ads.example/* "}, "block_resources": {"Image, font,image"},
		"prefers_color_scheme": {"dark"}, "prefers_reduced_motion": {"reduce"}, "is_cached": {"true"},
		"cache_ttl": {"31622400"}, "cache_key": {"v2"}, "headers": {"X-A: 1\r\nx-b:  two "},
		"cookies": {"a=1\nb=2; Domain=.X.example; Path=/p; Secure; HttpOnly; SameSite=Strict"}, "bypass_csp": {"true"},
	}
	o, _, err := NewParser(DefaultLimits).Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	if o.Width != 3840 || o.Height != 100 || !o.IsMobile || !o.IsLandscape || !o.HasTouch || o.DeviceScaleFactor != 1.5 ||
		o.UserAgent != "UA/1" || o.Format != WebP || o.Quality != 20 || o.Selector != "#a > b" ||
		!o.BlockAds || !o.BlockCookieBanners || !o.BlockTrackers || !o.Cached || o.CacheTTL != 31622400*time.Second ||
		o.CacheKey != "v2" || !o.BypassCSP || o.ColorScheme != "dark" || o.ReducedMotion != "reduce" {
		t.Errorf("options = %+v", o)
	}
	if strings.Join(o.BlockRequests, "|") != "*.png|https://ads.example/*" {
		t.Errorf("block_requests = %q", o.BlockRequests)
	}
	if strings.Join(o.BlockResources, ",") != "image,font" {
		t.Errorf("block_resources = %q", o.BlockResources)
	}
	if len(o.Headers) != 2 || o.Headers[0] != (Header{"X-A", "1"}) || o.Headers[1] != (Header{"X-B", "two"}) {
		t.Errorf("headers = %+v", o.Headers)
	}
	if len(o.Cookies) != 2 || o.Cookies[0].Domain != "" || o.Cookies[0].Path != "/" || // host-only: the browser takes the target URL
		o.Cookies[1].Domain != ".X.example" || !o.Cookies[1].Secure || !o.Cookies[1].HttpOnly || o.Cookies[1].Path != "/p" {
		t.Errorf("cookies = %+v %+v", o.Cookies[0], o.Cookies[1])
	}
}

func TestParseRejects(t *testing.T) {
	base := "api_key=k&url=https://example.com"
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name, query, msg string
	}{
		{"missing url", "api_key=k", "parameter url is required"},
		{"missing key", "url=https://example.com", "parameter api_key is required"},
		{"empty url", "api_key=k&url=", "parameter url is required"},
		{"no scheme", "api_key=k&url=example.com", "must start with http:// or https://"},
		{"ftp", "api_key=k&url=ftp://example.com/", "must start with http://"},
		{"file upper", "api_key=k&url=FILE:///etc/passwd", "must start with http://"},
		{"javascript", "api_key=k&url=javascript:alert(1)", "must start with http://"},
		{"no host", "api_key=k&url=http:///path", "must name a host"},
		{"opaque", "api_key=k&url=http:example.com", "must name a host"},
		{"userinfo", "api_key=k&url=http://user:pw@example.com/", "user information"},
		{"space", "api_key=k&url=%20https://example.com", "white space"},
		{"url too long", "api_key=k&url=https://example.com/" + long(2030), "longer than 2048"},
		{"unknown", base + "&widht=100", `unknown parameter "widht"`},
		{"repeated", base + "&width=100&width=200", "more than once"},
		{"width low", base + "&width=99", "width must be an integer from 100 to 3840"},
		{"width high", base + "&width=3841", "width must be an integer from 100 to 3840"},
		{"width text", base + "&width=abc", "width must be an integer"},
		{"width float", base + "&width=100.5", "width must be an integer"},
		{"height high", base + "&height=2161", "height must be an integer from 100 to 2160"},
		{"dsf", base + "&device_scale_factor=4", "device_scale_factor must be a number from 0.5 to 3"},
		{"dsf nan", base + "&device_scale_factor=NaN", "device_scale_factor must be a number"},
		{"bool", base + "&is_mobile=yes", "is_mobile must be true or false"},
		{"bool case", base + "&is_mobile=TRUE", "is_mobile must be true or false"},
		{"bool 1", base + "&bypass_csp=1", "bypass_csp must be true or false"},
		{"format", base + "&format=gif", "format must be one of jpeg, png, webp"},
		{"quality low", base + "&quality=19", "quality must be an integer from 20 to 100"},
		{"quality high", base + "&quality=101", "quality must be an integer from 20 to 100"},
		{"scheme", base + "&prefers_color_scheme=blue", "prefers_color_scheme must be one of light, dark"},
		{"motion", base + "&prefers_reduced_motion=yes", "prefers_reduced_motion must be one of"},
		{"ttl low", base + "&cache_ttl=3599", "cache_ttl must be an integer from 3600 to 31622400"},
		{"ttl high", base + "&cache_ttl=31622401", "cache_ttl must be an integer from 3600 to 31622400"},
		{"resource", base + "&block_resources=image,banana", `"banana" is not one of`},
		{"block all", base + "&block_requests=*", "would block every request"},
		{"headers long", base + "&headers=X-A:" + long(8190), "headers is longer than 8192"},
		{"headers no colon", base + "&headers=Oops", "line 1 is not of the form Name: Value"},
		{"headers bad name", base + "&headers=Bad Name: 1", "invalid header name"},
		{"headers host", base + "&headers=host: evil.example", "Host may not be set"},
		{"headers te", base + "&headers=Transfer-Encoding: chunked", "Transfer-Encoding may not be set"},
		{"headers conn", base + "&headers=X-A: 1%0AConnection: close", "Connection may not be set"},
		{"headers cr", base + "&headers=X-A: 1%0D2", "invalid header value"},
		{"headers nul", base + "&headers=X-A: 1%002", "invalid header value"},
		{"cookies long", base + "&cookies=a=" + long(4095), "cookies is longer than 4096"},
		{"cookies bad", base + "&cookies=novalue", "line 1 is not a valid Set-Cookie"},
		{"cookies cr", base + "&cookies=a=1%0Db=2", "carriage return"},
		{"ua newline", base + "&user_agent=a%0Ab", "user_agent contains characters"},
		{"selector long", base + "&selector=" + long(1025), "selector is longer than 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parse(t, tc.query)
			if err == nil {
				t.Fatalf("accepted %q", tc.query)
			}
			if ErrorCode(err) != EINVALID {
				t.Errorf("code = %s, want EINVALID", ErrorCode(err))
			}
			if !strings.Contains(ErrorMessage(err), tc.msg) {
				t.Errorf("message %q does not contain %q", ErrorMessage(err), tc.msg)
			}
		})
	}
}

func TestParseAcceptsLimits(t *testing.T) {
	for _, q := range []string{
		"width=100&height=100", "width=3840&height=2160", "quality=20", "quality=100", "cache_ttl=3600",
		"device_scale_factor=0.5", "device_scale_factor=3", "headers=X-A:" + strings.Repeat("a", 8188),
		"cookies=a=" + strings.Repeat("b", 4094), "url2=", // an empty unknown parameter is still unknown
	} {
		_, _, err := parse(t, "api_key=k&url=https://example.com&"+q)
		if q == "url2=" {
			if err == nil {
				t.Errorf("accepted unknown parameter")
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	// The longest URL allowed.
	u := "https://example.com/" + strings.Repeat("a", MaxURLLength-len("https://example.com/"))
	if _, _, err := NewParser(DefaultLimits).Parse(url.Values{"api_key": {"k"}, "url": {u}}); err != nil {
		t.Errorf("URL of exactly %d characters: %v", MaxURLLength, err)
	}
}

func TestMatchPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, url string
		want         bool
	}{
		{"*.png", "https://a.example/x.png", true},
		{"*.png", "https://a.example/x.png?v=1", false},
		{"*.png*", "https://a.example/x.png?v=1", true},
		{"https://ads.example/*", "https://ads.example/a/b.js", true},
		{"https://ads.example/*", "https://news.example/ads.example/", false},
		{"ads", "https://x.example/ads/1.js", true},
		{"ADS", "https://x.example/ads/1.js", true},
		{"*/ads/*", "https://x.example/ads/1.js", true},
		{"*/ads/*", "https://x.example/adsx/1.js", false},
		{"*a*a*", "https://a.example/", true},
		{"*aaa*aaa", "aaaaa", false},
		{"*tracker*.js", "https://cdn.example/tracker-v2/main.js", true},
	} {
		if got := MatchPattern(tc.pattern, tc.url); got != tc.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", tc.pattern, tc.url, got, tc.want)
		}
	}
}

func TestParamsTableIsComplete(t *testing.T) {
	for _, p := range Params(DefaultLimits) {
		if p.Description == "" {
			t.Errorf("%s has no description", p.Name)
		}
		if p.Name != "api_key" && p.apply == nil {
			t.Errorf("%s has no apply", p.Name)
		}
		if p.Default != nil {
			if _, err := p.decode(fmt.Sprint(p.Default)); err != nil {
				t.Errorf("%s: default %v does not pass its own rule: %v", p.Name, p.Default, err)
			}
		}
	}
}

func BenchmarkParse(b *testing.B) {
	p := NewParser(DefaultLimits)
	q, _ := url.ParseQuery("api_key=ss_live_x&url=https://example.com/a&width=1280&height=720&format=png&headers=X-A:%201&cookies=a=b&block_resources=image,font")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Parse(q); err != nil {
			b.Fatal(err)
		}
	}
}
