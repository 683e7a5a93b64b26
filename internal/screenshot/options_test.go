package screenshot

import (
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEveryOptionInCacheIdentity fails for a field of Options that is
// neither part of the cache identity nor explicitly left out of it, and for
// one whose change does not change the identity.
func TestEveryOptionInCacheIdentity(t *testing.T) {
	names := map[string]string{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Options]()) {
		tag, ok := f.Tag.Lookup("cache")
		if !ok || tag == "" {
			t.Errorf("Options.%s has no cache tag: name it in the cache identity, or mark it `cache:\"-\"` if it cannot change the image", f.Name)
			continue
		}
		if other, dup := names[tag]; dup && tag != "-" {
			t.Errorf("Options.%s and Options.%s share the cache name %q", f.Name, other, tag)
		}
		names[tag] = f.Name
	}
	// Bases in which every option takes effect: an image with everything
	// that depends on something else switched on, and a PDF.
	image := mustParse(t, "full_page=true&is_mobile=true&format=webp&full_page_scroll=true")
	pdf := mustParse(t, "format=pdf")
	for i, f := range reflect.VisibleFields(reflect.TypeFor[Options]()) {
		if f.Tag.Get("cache") == "-" {
			continue
		}
		changed := false
		for _, base := range []*Options{image, pdf} {
			o := *base
			mutate(t, reflect.ValueOf(&o).Elem().Field(i))
			if CacheID(&o, "k") != CacheID(base, "k") {
				changed = true
			}
		}
		if !changed {
			t.Errorf("changing Options.%s does not change the cache identity", f.Name)
		}
	}
	if CacheID(image, "k") == CacheID(image, "other") {
		t.Error("the owner is not part of the identity")
	}
}

func mustParse(t *testing.T, extra string) *Options {
	t.Helper()
	o, _, err := parse(t, "api_key=k&url=https://example.com&"+extra)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// mutate changes a field's value to another valid-looking one.
func mutate(t *testing.T, v reflect.Value) {
	switch x := v.Addr().Interface().(type) {
	case *bool:
		*x = !*x
	case *int:
		*x += 7
	case *float64:
		*x += 0.5
	case *string:
		*x += "x"
	case *Format:
		*x = PNG
	case *time.Duration:
		*x += time.Second
	case *[]string:
		*x = append(slices.Clone(*x), "x")
	case **Rect:
		*x = &Rect{1, 2, 3, 4}
	case *[]Header:
		*x = append(slices.Clone(*x), Header{"X-A", "1"})
	case *[]*http.Cookie:
		*x = append(slices.Clone(*x), &http.Cookie{Name: "a", Value: "b"})
	default:
		t.Fatalf("mutate: no rule for %s", v.Type())
	}
}

func TestCacheIdentityIgnoresWhatCannotChangeTheImage(t *testing.T) {
	same := [][2]string{
		{"format=png&quality=20", "format=png&quality=90"},
		{"full_page_scroll=false&full_page_scroll_duration=100", "full_page_scroll_duration=900"},
		{"pdf_landscape=true", ""},
		{"is_landscape=true", ""},
		{"block_resources=font,image", "block_resources=image&block_resources=font"},
		{"media_type=screen", ""},
		{"format=pdf&full_page=true", "format=pdf"},
	}
	for _, pair := range same {
		a, b := mustParse(t, pair[0]), mustParse(t, pair[1])
		if CacheID(a, "k") != CacheID(b, "k") {
			t.Errorf("%q and %q have different identities", pair[0], pair[1])
		}
	}
	differ := [][2]string{
		{"full_page=true", ""},
		{"full_page=true&full_page_scroll=false", "full_page=true"},
		{"image_width=100", "image_width=101"},
		{"clip_x=0&clip_y=0&clip_width=10&clip_height=10", ""},
		{"format=pdf&pdf_landscape=true", "format=pdf"},
		{"scripts=1", "scripts=2"},
	}
	for _, pair := range differ {
		a, b := mustParse(t, pair[0]), mustParse(t, pair[1])
		if CacheID(a, "k") == CacheID(b, "k") {
			t.Errorf("%q and %q share an identity", pair[0], pair[1])
		}
	}
}

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  []string // every parameter the message must name
	}{
		{"clip_x=1&clip_y=2", []string{"clip_width", "clip_height"}},
		{"clip_x=1&clip_y=2&clip_width=3&clip_height=4&selector=p", []string{"clip_x", "selector"}},
		{"full_page=true&selector=p", []string{"full_page", "selector"}},
		{"omit_background=true", []string{"omit_background", "jpeg"}},
		{"omit_background=true&format=jpeg", []string{"omit_background", "jpeg"}},
		{"format=pdf&image_width=100", []string{"image_width", "pdf"}},
		{"format=pdf&selector=p", []string{"selector", "pdf"}},
		{"clip_x=0&clip_y=0&clip_width=9000&clip_height=10&device_scale_factor=2", []string{"clip_width", "device_scale_factor"}},
		{"time_zone=Mars/Olympus", []string{"time_zone"}},
		{"time_zone=Local", []string{"time_zone"}},
		{"hide_selectors=p{color:red}", []string{"hide_selectors"}},
		{"wait_until=idle", []string{"wait_until"}},
		{"delay=11", []string{"delay"}},
		{"full_page_scroll_duration=10001", []string{"full_page_scroll_duration"}},
		{"full_page_max_height=99", []string{"full_page_max_height"}},
		{"image_width=9", []string{"image_width"}},
		{"width=100&width=200", []string{"width", "more than once"}},
	} {
		_, _, err := parse(t, "api_key=k&url=https://example.com&"+tc.query)
		if ErrorCode(err) != EINVALID {
			t.Errorf("%s: %v, want 400", tc.query, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %s", tc.query, ErrorMessage(err), w)
			}
		}
	}
	for _, ok := range []string{
		"full_page=false&selector=p",
		"omit_background=true&format=png",
		"omit_background=true&format=pdf",
		"format=pdf&full_page=true&pdf_paper_format=letter&pdf_landscape=true&pdf_print_background=false",
		"clip_x=0&clip_y=5000&clip_width=100&clip_height=100&full_page=true",
		"time_zone=UTC", "time_zone=America/Argentina/Buenos_Aires",
		"image_width=10&image_height=2160",
		"hide_selectors=.a%0A%0A%23b&hide_selectors=c",
		"pdf_landscape=true", // accepted and ignored for images
	} {
		if _, _, err := parse(t, "api_key=k&url=https://example.com&"+ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	o := mustParse(t, "hide_selectors=.a%0A%0A%23b&hide_selectors=c")
	if !slices.Equal(o.HideSelectors, []string{".a", "#b", "c"}) {
		t.Errorf("hide_selectors = %q", o.HideSelectors)
	}
	if o := mustParse(t, "format=pdf"); o.MediaType != "print" || !o.PDFPrintBackground || o.PDFPaperFormat != "a4" {
		t.Errorf("pdf defaults: %+v", o)
	}
	if o := mustParse(t, ""); o.MediaType != "screen" || o.WaitUntil != "load" || o.FullPageScrollDuration != 400*time.Millisecond ||
		!o.FullPageScroll || o.FullPageMaxHeight != MaxCaptureSide || o.Target == nil || o.Host() != "example.com" {
		t.Errorf("defaults: %+v", o)
	}
}

// TestReadmeParameterTable keeps the README's parameter table and the
// parameter table in step: every parameter has a row, every row a
// parameter.
func TestReadmeParameterTable(t *testing.T) {
	buf, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(buf)
	start := strings.Index(readme, "| Parameter | Type | Default | Rule |")
	if start < 0 {
		t.Fatal("README has no parameter table")
	}
	table := readme[start:]
	if end := strings.Index(table, "\n\n"); end > 0 {
		table = table[:end]
	}
	rows := map[string]bool{}
	name := regexp.MustCompile("`([a-z_]+)`")
	for _, line := range strings.Split(table, "\n")[2:] {
		first := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			rows[m[1]] = true
		}
	}
	params := map[string]bool{}
	for _, p := range Params(DefaultLimits) {
		params[p.Name] = true
		if !rows[p.Name] {
			t.Errorf("README's parameter table has no row for %s", p.Name)
		}
	}
	for r := range rows {
		if !params[r] {
			t.Errorf("README's parameter table names %s, which is not a parameter", r)
		}
	}
	// One example URL per capture option.
	for _, p := range Params(DefaultLimits) {
		if p.Group == "capture" || p.Group == "wait" || p.Group == "interact" || p.Group == "pdf" {
			if !strings.Contains(readme, "&"+p.Name+"=") {
				t.Errorf("README has no example URL with %s", p.Name)
			}
		}
	}
}

// TestCookiesAndPortsChromiumWouldRefuse are 400s before any render, not
// 500s from the browser.
func TestCookiesAndPortsChromiumWouldRefuse(t *testing.T) {
	for _, tc := range []struct{ target, cookie, want string }{
		{"http://127.0.0.1:99999/", "", "port 99999"},
		{"http://127.0.0.1:0/", "", "port 0"},
		{"https://example.com/", "a=b; Path=rel", "Path"},
		{"https://example.com/", "__Secure-a=b", "__Secure-"},
		{"https://example.com/", "__Host-a=b; Secure; Path=/x", "__Host-"},
		{"https://example.com/", "__Host-a=b; Secure; Domain=example.com", "__Host-"},
		{"https://example.com/", "a=b; SameSite=None", "SameSite=None"},
		{"https://example.com/", "a=b; Domain=other.example", "Domain=other.example"},
		{"https://example.com/", "a=b; Domain=ample.com", "Domain=ample.com"},
		{"http://127.0.0.1/", "a=b; Domain=0.0.1", "Domain=0.0.1"},
	} {
		q := url.Values{"api_key": {"k"}, "url": {tc.target}}
		if tc.cookie != "" {
			q.Set("cookies", tc.cookie)
		}
		_, _, err := NewParser(DefaultLimits).Parse(q)
		if ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), tc.want) {
			t.Errorf("%s %q: %v, want 400 naming %s", tc.target, tc.cookie, err, tc.want)
		}
	}
	for _, ok := range []struct{ target, cookie string }{
		{"https://www.example.com/", "a=b; Domain=example.com"},
		{"https://example.com:8443/", "__Host-a=b; Secure; Path=/"},
		{"https://example.com/", "__Secure-a=b; Secure; SameSite=None"},
		{"http://127.0.0.1:65535/", "a=b; Domain=127.0.0.1"},
	} {
		q := url.Values{"api_key": {"k"}, "url": {ok.target}, "cookies": {ok.cookie}}
		if _, _, err := NewParser(DefaultLimits).Parse(q); err != nil {
			t.Errorf("%s %q: %v", ok.target, ok.cookie, err)
		}
	}
}
