package screenshot

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// Every input either parses or is refused with EINVALID: never a panic, never
// another code.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"api_key=k&url=https://example.com",
		"api_key=k&url=https://example.com&width=100&height=2160&format=png&device_scale_factor=2.5",
		"api_key=k&url=http://[::1]:80/&headers=A:%20b%0D%0AC:d&cookies=a=b;%20Path=/",
		"api_key=k&url=HTTP://EXAMPLE.com&block_resources=image,font&block_requests=*.png%0A*ads*",
		"api_key=k&url=https://example.com&cache_ttl=3600&is_cached=true&cache_key=x",
		"url=javascript:alert(1)&api_key=",
		"api_key=k&url=https://a.example&quality=-0&width=+100",
		"api_key=k&url=https://a.example&full_page=true&full_page_scroll=false&full_page_scroll_duration=0&full_page_max_height=100",
		"api_key=k&url=https://a.example&clip_x=0&clip_y=99999&clip_width=16384&clip_height=1&device_scale_factor=2",
		"api_key=k&url=https://a.example&clip_x=1&clip_y=1&selector=%23a",
		"api_key=k&url=https://a.example&time_zone=Europe/Berlin&media_type=print&format=pdf&pdf_paper_format=letter",
		"api_key=k&url=https://a.example&time_zone=../../etc/passwd",
		"api_key=k&url=https://a.example&hide_selectors=.a%0A%23b&hide_selectors=c{}&block_resources=font&block_resources=image",
		"api_key=k&url=https://a.example&omit_background=true&format=jpeg&image_width=10&image_height=2160",
		"api_key=k&url=https://a.example&wait_until=networkidle2&wait_for_selector=%23x&delay=10&click=button&scripts=1&styles=p{}",
	} {
		f.Add(s)
	}
	p := NewParser(DefaultLimits)
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		o, _, err := p.Parse(q)
		if err != nil {
			if ErrorCode(err) != EINVALID {
				t.Fatalf("code %s for %q: %v", ErrorCode(err), query, err)
			}
			return
		}
		if o.Width < MinWidth || o.Width > DefaultLimits.MaxWidth || o.Height < MinHeight || o.Height > DefaultLimits.MaxHeight {
			t.Fatalf("size out of range: %dx%d", o.Width, o.Height)
		}
		u, err := url.Parse(o.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			t.Fatalf("accepted URL %q", o.URL)
		}
		if c := o.Clip; c != nil && (c.X < 0 || c.Y < 0 || c.Width < 1 || c.Height < 1 ||
			float64(c.Width)*max(o.DeviceScaleFactor, 1) > MaxCaptureSide || o.Selector != "") {
			t.Fatalf("accepted clip %+v with selector %q", *c, o.Selector)
		}
		if o.OmitBackground && o.Format == JPEG {
			t.Fatal("accepted omit_background with jpeg")
		}
		for _, sel := range o.HideSelectors {
			if sel == "" || strings.ContainsAny(sel, "{}\n") {
				t.Fatalf("accepted hide selector %q", sel)
			}
		}
		if o.TimeZone != "" {
			if _, err := time.LoadLocation(o.TimeZone); err != nil || o.TimeZone == "Local" {
				t.Fatalf("accepted time zone %q", o.TimeZone)
			}
		}
		CacheID(o, "k") // never panics
	})
}

func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"A: b", "A: b\r\nC: d", "Host: x", "A: b\rC: d", "A:\x00", ":x", "A b: c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := ParseHeaders(s)
		if err != nil {
			return
		}
		for _, h := range hs {
			if h.Name == "" || forbiddenHeaders[h.Name] {
				t.Fatalf("accepted header %q", h.Name)
			}
			for _, c := range h.Value {
				if c == '\r' || c == '\n' || c == 0 {
					t.Fatalf("accepted value %q", h.Value)
				}
			}
		}
	})
}

func FuzzParseCookies(f *testing.F) {
	for _, s := range []string{"a=b", "a=b; Path=/; Secure", "a=b\nc=d", "a", "=b", "a=b\r\nc=d; Max-Age=10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := ParseCookies(s)
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.Name == "" || c.Path == "" {
				t.Fatalf("accepted cookie %+v", c)
			}
		}
	})
}

func FuzzMatchPattern(f *testing.F) {
	f.Add("*.png", "https://a.example/x.png")
	f.Add("*a*b*c*", "xxaxxbxxc")
	f.Add("ads", "https://x.example/ads")
	f.Fuzz(func(t *testing.T, pattern, u string) {
		got := MatchPattern(pattern, u)
		// A pattern made only of literal text matches exactly the URLs
		// that contain it; `*` alone matches everything.
		if pattern == "*" && !got {
			t.Fatalf("* did not match %q", u)
		}
	})
}
