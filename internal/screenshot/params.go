package screenshot

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is the JSON-schema type of a query parameter.
type Kind string

const (
	KindString  Kind = "string"
	KindInteger Kind = "integer"
	KindNumber  Kind = "number"
	KindBoolean Kind = "boolean"
	KindArray   Kind = "array" // comma-separated strings
)

// Param describes one query parameter of the screenshot endpoint. The parser
// and the OpenAPI document both read this table, so the two cannot disagree.
type Param struct {
	Name        string
	Kind        Kind
	Description string
	Required    bool
	Default     any // string, int, float64 or bool; nil when there is none
	// Minimum and Maximum bound integers and numbers when HasRange is set.
	Minimum, Maximum float64
	HasRange         bool
	MaxLength        int      // strings, in characters; 0 means no limit
	Enum             []string // allowed strings, or allowed array items
	Example          string
	// Group is the heading the parameter stands under in the README and
	// the dashboard.
	Group string
	// List parameters hold several items (lines, or comma-separated for
	// arrays) and may also be repeated: name=a&name=b is name=a\nb.
	List bool

	apply func(o *Options, v value) error
}

// value is one decoded query value.
type value struct {
	s   string
	i   int
	f   float64
	b   bool
	arr []string
}

// Limits are the server settings that bound the parameters.
type Limits struct {
	DefaultWidth, DefaultHeight int
	MaxWidth, MaxHeight         int
}

// DefaultLimits are the limits of the specification's self-hosted defaults.
var DefaultLimits = Limits{DefaultWidth: 1280, DefaultHeight: 720, MaxWidth: 3840, MaxHeight: 2160}

// Bounds of the parameters that are not settings.
const (
	MaxURLLength     = 2048
	MaxHeadersLength = 8192
	MaxCookiesLength = 4096
	MinWidth         = 100
	MinHeight        = 100
	MinCacheTTL      = 3600
	MaxCacheTTL      = 31622400
	MaxSelector      = 1024
	MaxUserAgent     = 1024
	MaxCacheKey      = 256
	MaxBlockRequests = 4096
	// MaxCaptureSide bounds every image side in device pixels: larger
	// images exceed what the compositor produces in one piece and what a
	// client wants in an <img>.
	MaxCaptureSide   = 16384
	MaxClipOffset    = 100000
	MaxScript        = 16384
	MaxStyles        = 16384
	MaxHideSelectors = 4096
	MaxScrollMillis  = 10000
	MaxDelaySeconds  = 10
	MinImageSide     = 10
)

// PaperFormats are the values of pdf_paper_format, with their size in
// inches (width, height in portrait).
var PaperFormats = map[string][2]float64{
	"letter": {8.5, 11}, "legal": {8.5, 14}, "tabloid": {11, 17}, "ledger": {17, 11},
	"a0": {33.1, 46.8}, "a1": {23.4, 33.1}, "a2": {16.54, 23.4}, "a3": {11.7, 16.54},
	"a4": {8.27, 11.7}, "a5": {5.83, 8.27}, "a6": {4.13, 5.83},
}

// ResourceTypes are the values of block_resources.
var ResourceTypes = []string{
	"document", "stylesheet", "image", "media", "font", "script", "texttrack", "xhr", "fetch",
	"prefetch", "eventsource", "websocket", "manifest", "signedexchange", "ping",
	"cspviolationreport", "preflight", "other",
}

// Params returns the parameter table for the given limits, in the order of
// the specification.
func Params(l Limits) []Param {
	return []Param{
		{Name: "api_key", Kind: KindString, Group: "required", Required: true, MaxLength: 256,
			Description: "API key. Missing: 400; unknown, revoked or malformed: 403.",
			Example:     "ss_live_…"},
		{Name: "url", Kind: KindString, Group: "required", Required: true, MaxLength: MaxURLLength,
			Description: "Page to capture: an absolute http:// or https:// URL without user information.",
			Example:     "https://example.com", apply: applyURL},
		{Name: "width", Kind: KindInteger, Group: "viewport", Default: l.DefaultWidth, HasRange: true,
			Minimum: MinWidth, Maximum: float64(l.MaxWidth),
			Description: "Viewport width in CSS pixels.",
			apply:       func(o *Options, v value) error { o.Width = v.i; return nil }},
		{Name: "height", Kind: KindInteger, Group: "viewport", Default: l.DefaultHeight, HasRange: true,
			Minimum: MinHeight, Maximum: float64(l.MaxHeight),
			Description: "Viewport height in CSS pixels.",
			apply:       func(o *Options, v value) error { o.Height = v.i; return nil }},
		{Name: "is_mobile", Kind: KindBoolean, Group: "viewport", Default: false,
			Description: "Emulate a mobile device: mobile viewport and, unless user_agent is given, a mobile user agent.",
			apply:       func(o *Options, v value) error { o.IsMobile = v.b; return nil }},
		{Name: "is_landscape", Kind: KindBoolean, Group: "viewport", Default: false,
			Description: "Landscape screen orientation; takes effect with is_mobile=true.",
			apply:       func(o *Options, v value) error { o.IsLandscape = v.b; return nil }},
		{Name: "has_touch", Kind: KindBoolean, Group: "viewport", Default: false,
			Description: "Emulate touch input.",
			apply:       func(o *Options, v value) error { o.HasTouch = v.b; return nil }},
		{Name: "device_scale_factor", Kind: KindNumber, Group: "viewport", Default: 1.0, HasRange: true, Minimum: 0.5, Maximum: 3,
			Description: "Device pixel ratio. The image is width×factor by height×factor pixels.",
			apply:       func(o *Options, v value) error { o.DeviceScaleFactor = v.f; return nil }},
		{Name: "user_agent", Kind: KindString, Group: "viewport", MaxLength: MaxUserAgent,
			Description: "User-Agent override.",
			apply:       applyUserAgent},
		{Name: "format", Kind: KindString, Group: "capture", Default: string(JPEG), Enum: []string{"jpeg", "png", "webp", "pdf"},
			Description: "Output format: an image (jpeg, png, webp) or the page printed to PDF (application/pdf).",
			apply:       func(o *Options, v value) error { o.Format = Format(v.s); return nil }},
		{Name: "quality", Kind: KindInteger, Group: "capture", Default: 80, HasRange: true, Minimum: 20, Maximum: 100,
			Description: "Compression quality for jpeg and webp; ignored for png.",
			apply:       func(o *Options, v value) error { o.Quality = v.i; return nil }},
		{Name: "selector", Kind: KindString, Group: "capture", MaxLength: MaxSelector,
			Description: "CSS selector; the first matching element is captured instead of the viewport. No match: 422.",
			apply:       func(o *Options, v value) error { o.Selector = v.s; return nil }},
		{Name: "full_page", Kind: KindBoolean, Default: false, Group: "capture",
			Description: "Capture the whole scrollable page instead of the viewport: width×device_scale_factor wide, the document's height×device_scale_factor tall, at most full_page_max_height CSS pixels (cut there, with X-Screenshot-Truncated: true).",
			apply:       func(o *Options, v value) error { o.FullPage = v.b; return nil }},
		{Name: "full_page_scroll", Kind: KindBoolean, Default: true, Group: "capture",
			Description: "With full_page=true: first scroll through the page step by step so that lazy images and IntersectionObserver content load, then return to the top. Ignored when full_page=false.",
			apply:       func(o *Options, v value) error { o.FullPageScroll = v.b; return nil }},
		{Name: "full_page_scroll_duration", Kind: KindInteger, Default: 400, HasRange: true, Minimum: 0, Maximum: MaxScrollMillis, Group: "capture",
			Description: "Milliseconds the full_page_scroll takes. Ignored when full_page=false.",
			apply: func(o *Options, v value) error {
				o.FullPageScrollDuration = time.Duration(v.i) * time.Millisecond
				return nil
			}},
		{Name: "full_page_max_height", Kind: KindInteger, Default: MaxCaptureSide, HasRange: true, Minimum: 100, Maximum: MaxCaptureSide, Group: "capture",
			Description: "Most CSS pixels of a full_page capture; a longer page is cut there (never an error) and the response carries X-Screenshot-Truncated: true. The image is also cut at 16384 device pixels.",
			apply:       func(o *Options, v value) error { o.FullPageMaxHeight = v.i; return nil }},
		{Name: "clip_x", Kind: KindInteger, HasRange: true, Minimum: 0, Maximum: MaxClipOffset, Group: "capture",
			Description: "Left edge of the rectangle to capture, CSS pixels from the document's left. clip_x, clip_y, clip_width and clip_height go together; exclusive with selector.",
			apply:       func(o *Options, v value) error { o.clip().X = v.i; return nil }},
		{Name: "clip_y", Kind: KindInteger, HasRange: true, Minimum: 0, Maximum: MaxClipOffset, Group: "capture",
			Description: "Top edge of the rectangle to capture, CSS pixels from the document's top (also below the fold).",
			apply:       func(o *Options, v value) error { o.clip().Y = v.i; return nil }},
		{Name: "clip_width", Kind: KindInteger, HasRange: true, Minimum: 1, Maximum: MaxCaptureSide, Group: "capture",
			Description: "Width of the rectangle to capture, CSS pixels.",
			apply:       func(o *Options, v value) error { o.clip().Width = v.i; return nil }},
		{Name: "clip_height", Kind: KindInteger, HasRange: true, Minimum: 1, Maximum: MaxCaptureSide, Group: "capture",
			Description: "Height of the rectangle to capture, CSS pixels.",
			apply:       func(o *Options, v value) error { o.clip().Height = v.i; return nil }},
		{Name: "omit_background", Kind: KindBoolean, Default: false, Group: "capture",
			Description: "Transparent background where the page paints none: png, webp and pdf; 400 with format=jpeg.",
			apply:       func(o *Options, v value) error { o.OmitBackground = v.b; return nil }},
		{Name: "image_width", Kind: KindInteger, HasRange: true, Minimum: MinImageSide, Maximum: float64(l.MaxWidth), Group: "capture",
			Description: "Scale the output image to this width in pixels (a thumbnail), by the browser's own capture scaling. Alone, it keeps the aspect ratio; with image_height, the capture is first cropped from the right or the bottom to that ratio, never stretched. Not with format=pdf.",
			apply:       func(o *Options, v value) error { o.ImageWidth = v.i; return nil }},
		{Name: "image_height", Kind: KindInteger, HasRange: true, Minimum: MinImageSide, Maximum: float64(l.MaxHeight), Group: "capture",
			Description: "Scale the output image to this height in pixels; see image_width.",
			apply:       func(o *Options, v value) error { o.ImageHeight = v.i; return nil }},
		{Name: "media_type", Kind: KindString, Enum: []string{"screen", "print"}, Group: "capture",
			Description: "Emulated CSS media type: print applies the page's @media print rules. Default: screen for images, print for format=pdf.",
			apply:       func(o *Options, v value) error { o.MediaType = v.s; return nil }},
		{Name: "time_zone", Kind: KindString, MaxLength: 64, Group: "capture",
			Description: "IANA time zone of the page (Date, Intl), e.g. Europe/Berlin. Unknown names: 400.",
			Example:     "Europe/Berlin", apply: applyTimeZone},
		{Name: "wait_until", Kind: KindString, Default: "load", Enum: []string{"load", "domcontentloaded", "networkidle0", "networkidle2"}, Group: "wait",
			Description: "Navigation milestone to wait for: the load event (then a short quiet-network wait), DOMContentLoaded, no network connections for 500 ms (networkidle0), or at most 2 for 500 ms (networkidle2).",
			apply:       func(o *Options, v value) error { o.WaitUntil = v.s; return nil }},
		{Name: "wait_for_selector", Kind: KindString, MaxLength: MaxSelector, Group: "wait",
			Description: "CSS selector: after load, wait until a matching element exists and is visible, within SCREENSHOT_TIMEOUT. Never appears: 422; invalid selector: 400.",
			apply:       func(o *Options, v value) error { o.WaitForSelector = v.s; return nil }},
		{Name: "delay", Kind: KindInteger, Default: 0, HasRange: true, Minimum: 0, Maximum: MaxDelaySeconds, Group: "wait",
			Description: "Seconds to wait after everything else, just before the capture; counted inside SCREENSHOT_TIMEOUT.",
			apply:       func(o *Options, v value) error { o.Delay = time.Duration(v.i) * time.Second; return nil }},
		{Name: "click", Kind: KindString, MaxLength: MaxSelector, Group: "interact",
			Description: "CSS selector: after load, click the first match (a real mouse click at its centre), then wait for the network to be quiet. No match: 422.",
			apply:       func(o *Options, v value) error { o.Click = v.s; return nil }},
		{Name: "hide_selectors", Kind: KindString, MaxLength: MaxHideSelectors, Group: "interact", List: true,
			Description: "CSS selectors, one per line (or the parameter repeated): matching elements get display: none !important before the capture, through a stylesheet that the page's Content-Security-Policy cannot refuse. An invalid selector: 400.",
			apply:       applyHideSelectors},
		{Name: "styles", Kind: KindString, MaxLength: MaxStyles, Group: "interact",
			Description: "CSS added to every document of the page, through the same CSP-proof stylesheet.",
			apply:       func(o *Options, v value) error { o.Styles = v.s; return nil }},
		{Name: "scripts", Kind: KindString, MaxLength: MaxScript, Group: "interact",
			Description: "JavaScript run in the page after load (awaited when it returns a promise), within SCREENSHOT_TIMEOUT and under every outbound rule of the page. A script that throws: 422 with its message.",
			apply:       func(o *Options, v value) error { o.Scripts = v.s; return nil }},
		{Name: "pdf_paper_format", Kind: KindString, Default: "a4", Enum: paperNames(), Group: "pdf",
			Description: "Paper size of format=pdf. Ignored for images.",
			apply:       func(o *Options, v value) error { o.PDFPaperFormat = v.s; return nil }},
		{Name: "pdf_landscape", Kind: KindBoolean, Default: false, Group: "pdf",
			Description: "Landscape paper for format=pdf. Ignored for images.",
			apply:       func(o *Options, v value) error { o.PDFLandscape = v.b; return nil }},
		{Name: "pdf_print_background", Kind: KindBoolean, Default: true, Group: "pdf",
			Description: "Print background colours and images in format=pdf. Ignored for images.",
			apply:       func(o *Options, v value) error { o.PDFPrintBackground = v.b; return nil }},
		{Name: "block_ads", Kind: KindBoolean, Group: "blocking", Default: false,
			Description: "Block advertisements.",
			apply:       func(o *Options, v value) error { o.BlockAds = v.b; return nil }},
		{Name: "block_cookie_banners", Kind: KindBoolean, Group: "blocking", Default: false,
			Description: "Hide cookie consent banners.",
			apply:       func(o *Options, v value) error { o.BlockCookieBanners = v.b; return nil }},
		{Name: "block_trackers", Kind: KindBoolean, Group: "blocking", Default: false,
			Description: "Block trackers.",
			apply:       func(o *Options, v value) error { o.BlockTrackers = v.b; return nil }},
		{Name: "block_requests", Kind: KindString, Group: "blocking", MaxLength: MaxBlockRequests,
			Description: "URL patterns to block, one per line; * matches any run of characters. A pattern without * matches URLs that contain it.",
			List:        true, apply: applyBlockRequests},
		{Name: "block_resources", Kind: KindArray, Group: "blocking", Enum: ResourceTypes, List: true,
			Description: "Resource types to block, comma-separated.",
			apply:       applyBlockResources},
		{Name: "prefers_color_scheme", Kind: KindString, Group: "viewport", Default: "light", Enum: []string{"light", "dark"},
			Description: "Emulated prefers-color-scheme media feature.",
			apply:       func(o *Options, v value) error { o.ColorScheme = v.s; return nil }},
		{Name: "prefers_reduced_motion", Kind: KindString, Group: "viewport", Default: "no-preference", Enum: []string{"no-preference", "reduce"},
			Description: "Emulated prefers-reduced-motion media feature.",
			apply:       func(o *Options, v value) error { o.ReducedMotion = v.s; return nil }},
		{Name: "is_cached", Kind: KindBoolean, Group: "cache", Default: false,
			Description: "Serve from and store in the cache.",
			apply:       func(o *Options, v value) error { o.Cached = v.b; return nil }},
		{Name: "cache_ttl", Kind: KindInteger, Group: "cache", Default: MinCacheTTL, HasRange: true, Minimum: MinCacheTTL, Maximum: MaxCacheTTL,
			Description: "Seconds a cached screenshot lives; used with is_cached=true.",
			apply:       func(o *Options, v value) error { o.CacheTTL = time.Duration(v.i) * time.Second; return nil }},
		{Name: "cache_key", Kind: KindString, Group: "cache", MaxLength: MaxCacheKey,
			Description: "Groups cached screenshots: the same options with another cache_key are another entry.",
			apply:       func(o *Options, v value) error { o.CacheKey = v.s; return nil }},
		{Name: "headers", Kind: KindString, Group: "advanced", MaxLength: MaxHeadersLength,
			Description: "Extra request headers, one `Name: Value` per line. Host, Content-Length and hop-by-hop headers are refused.",
			List:        true, apply: applyHeaders},
		{Name: "cookies", Kind: KindString, Group: "advanced", MaxLength: MaxCookiesLength,
			Description: "Cookies in Set-Cookie syntax, one per line. Without Domain a cookie belongs to the target's host.",
			List:        true, apply: applyCookies},
		{Name: "bypass_csp", Kind: KindBoolean, Group: "advanced", Default: false,
			Description: "Bypass the page's Content Security Policy; every use is logged.",
			apply:       func(o *Options, v value) error { o.BypassCSP = v.b; return nil }},
	}
}

// Parser validates queries against a parameter table.
type Parser struct {
	params []Param
	byName map[string]*Param
	limits Limits
}

// NewParser returns a parser for the limits.
func NewParser(l Limits) *Parser {
	p := &Parser{params: Params(l), byName: map[string]*Param{}, limits: l}
	for i := range p.params {
		p.byName[p.params[i].Name] = &p.params[i]
	}
	return p
}

// Params returns the parser's table.
func (p *Parser) Params() []Param { return p.params }

// Parse validates the query and returns the options and the API key. Every
// failure is an *Error with code EINVALID whose message names the parameter
// and the rule.
func (p *Parser) Parse(q url.Values) (*Options, string, error) {
	for _, name := range sortedKeys(q) {
		if _, ok := p.byName[name]; !ok {
			return nil, "", Errorf(EINVALID, "unknown parameter %q", clip(name, 64))
		}
		if len(q[name]) > 1 && !p.byName[name].List {
			return nil, "", Errorf(EINVALID, "parameter %s is given more than once", name)
		}
	}
	o := &Options{}
	var key string
	for i := range p.params {
		prm := &p.params[i]
		raw := prm.join(q[prm.Name])
		present := raw != ""
		if !present {
			if prm.Required {
				return nil, "", Errorf(EINVALID, "parameter %s is required", prm.Name)
			}
			if prm.Default == nil {
				continue
			}
			raw = fmt.Sprint(prm.Default)
		}
		v, err := prm.decode(raw)
		if err != nil {
			return nil, "", err
		}
		if prm.Name == "api_key" {
			key = v.s
			continue
		}
		if err := prm.apply(o, v); err != nil {
			return nil, "", err
		}
	}
	if err := cookieDomains(o); err != nil {
		return nil, "", err
	}
	if err := checkRules(o, q, p.limits); err != nil {
		return nil, "", err
	}
	return o, key, nil
}

// join gives the raw value of a parameter: the one value, or for a list
// parameter every non-empty value joined as lines (or commas, for arrays).
func (prm *Param) join(vs []string) string {
	if len(vs) == 1 || !prm.List {
		if len(vs) == 0 {
			return ""
		}
		return vs[0]
	}
	sep := "\n"
	if prm.Kind == KindArray {
		sep = ","
	}
	var parts []string
	for _, v := range vs {
		if v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, sep)
}

func (prm *Param) decode(raw string) (value, error) {
	if prm.MaxLength > 0 && len(raw) > prm.MaxLength {
		return value{}, Errorf(EINVALID, "parameter %s is longer than %d characters", prm.Name, prm.MaxLength)
	}
	var v value
	switch prm.Kind {
	case KindBoolean:
		switch raw {
		case "true":
			v.b = true
		case "false":
		default:
			return v, Errorf(EINVALID, "parameter %s must be true or false", prm.Name)
		}
	case KindInteger:
		n, err := strconv.Atoi(raw)
		if err != nil || n < int(prm.Minimum) || n > int(prm.Maximum) {
			return v, Errorf(EINVALID, "parameter %s must be an integer from %d to %d", prm.Name, int(prm.Minimum), int(prm.Maximum))
		}
		v.i = n
	case KindNumber:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(f) || f < prm.Minimum || f > prm.Maximum {
			return v, Errorf(EINVALID, "parameter %s must be a number from %g to %g", prm.Name, prm.Minimum, prm.Maximum)
		}
		v.f = f
	case KindArray:
		for item := range strings.SplitSeq(raw, ",") {
			item = strings.ToLower(strings.TrimSpace(item))
			if item == "" {
				continue
			}
			if len(prm.Enum) > 0 && !slices.Contains(prm.Enum, item) {
				return v, Errorf(EINVALID, "parameter %s: %q is not one of %s", prm.Name, clip(item, 32), strings.Join(prm.Enum, ", "))
			}
			if !slices.Contains(v.arr, item) {
				v.arr = append(v.arr, item)
			}
		}
	default:
		if len(prm.Enum) > 0 && !slices.Contains(prm.Enum, raw) {
			return v, Errorf(EINVALID, "parameter %s must be one of %s", prm.Name, strings.Join(prm.Enum, ", "))
		}
		v.s = raw
	}
	return v, nil
}

func sortedKeys(q url.Values) []string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clip shortens client input that is echoed in an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
