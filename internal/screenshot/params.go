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
)

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
		{Name: "api_key", Kind: KindString, Required: true, MaxLength: 256,
			Description: "API key. Missing: 400; unknown, revoked or malformed: 403.",
			Example:     "ss_live_…"},
		{Name: "url", Kind: KindString, Required: true, MaxLength: MaxURLLength,
			Description: "Page to capture: an absolute http:// or https:// URL without user information.",
			Example:     "https://example.com", apply: applyURL},
		{Name: "width", Kind: KindInteger, Default: l.DefaultWidth, HasRange: true,
			Minimum: MinWidth, Maximum: float64(l.MaxWidth),
			Description: "Viewport width in CSS pixels.",
			apply:       func(o *Options, v value) error { o.Width = v.i; return nil }},
		{Name: "height", Kind: KindInteger, Default: l.DefaultHeight, HasRange: true,
			Minimum: MinHeight, Maximum: float64(l.MaxHeight),
			Description: "Viewport height in CSS pixels.",
			apply:       func(o *Options, v value) error { o.Height = v.i; return nil }},
		{Name: "is_mobile", Kind: KindBoolean, Default: false,
			Description: "Emulate a mobile device: mobile viewport and, unless user_agent is given, a mobile user agent.",
			apply:       func(o *Options, v value) error { o.IsMobile = v.b; return nil }},
		{Name: "is_landscape", Kind: KindBoolean, Default: false,
			Description: "Landscape screen orientation; takes effect with is_mobile=true.",
			apply:       func(o *Options, v value) error { o.IsLandscape = v.b; return nil }},
		{Name: "has_touch", Kind: KindBoolean, Default: false,
			Description: "Emulate touch input.",
			apply:       func(o *Options, v value) error { o.HasTouch = v.b; return nil }},
		{Name: "device_scale_factor", Kind: KindNumber, Default: 1.0, HasRange: true, Minimum: 0.5, Maximum: 3,
			Description: "Device pixel ratio. The image is width×factor by height×factor pixels.",
			apply:       func(o *Options, v value) error { o.DeviceScaleFactor = v.f; return nil }},
		{Name: "user_agent", Kind: KindString, MaxLength: MaxUserAgent,
			Description: "User-Agent override.",
			apply:       applyUserAgent},
		{Name: "format", Kind: KindString, Default: string(JPEG), Enum: []string{"jpeg", "png", "webp"},
			Description: "Image format.",
			apply:       func(o *Options, v value) error { o.Format = Format(v.s); return nil }},
		{Name: "quality", Kind: KindInteger, Default: 80, HasRange: true, Minimum: 20, Maximum: 100,
			Description: "Compression quality for jpeg and webp; ignored for png.",
			apply:       func(o *Options, v value) error { o.Quality = v.i; return nil }},
		{Name: "selector", Kind: KindString, MaxLength: MaxSelector,
			Description: "CSS selector; the first matching element is captured instead of the viewport. No match: 422.",
			apply:       func(o *Options, v value) error { o.Selector = v.s; return nil }},
		{Name: "block_ads", Kind: KindBoolean, Default: false,
			Description: "Block advertisements.",
			apply:       func(o *Options, v value) error { o.BlockAds = v.b; return nil }},
		{Name: "block_cookie_banners", Kind: KindBoolean, Default: false,
			Description: "Hide cookie consent banners.",
			apply:       func(o *Options, v value) error { o.BlockCookieBanners = v.b; return nil }},
		{Name: "block_trackers", Kind: KindBoolean, Default: false,
			Description: "Block trackers.",
			apply:       func(o *Options, v value) error { o.BlockTrackers = v.b; return nil }},
		{Name: "block_requests", Kind: KindString, MaxLength: MaxBlockRequests,
			Description: "URL patterns to block, one per line; * matches any run of characters. A pattern without * matches URLs that contain it.",
			apply:       applyBlockRequests},
		{Name: "block_resources", Kind: KindArray, Enum: ResourceTypes,
			Description: "Resource types to block, comma-separated.",
			apply:       applyBlockResources},
		{Name: "prefers_color_scheme", Kind: KindString, Default: "light", Enum: []string{"light", "dark"},
			Description: "Emulated prefers-color-scheme media feature.",
			apply:       func(o *Options, v value) error { o.ColorScheme = v.s; return nil }},
		{Name: "prefers_reduced_motion", Kind: KindString, Default: "no-preference", Enum: []string{"no-preference", "reduce"},
			Description: "Emulated prefers-reduced-motion media feature.",
			apply:       func(o *Options, v value) error { o.ReducedMotion = v.s; return nil }},
		{Name: "is_cached", Kind: KindBoolean, Default: false,
			Description: "Serve from and store in the cache.",
			apply:       func(o *Options, v value) error { o.Cached = v.b; return nil }},
		{Name: "cache_ttl", Kind: KindInteger, Default: MinCacheTTL, HasRange: true, Minimum: MinCacheTTL, Maximum: MaxCacheTTL,
			Description: "Seconds a cached screenshot lives; used with is_cached=true.",
			apply:       func(o *Options, v value) error { o.CacheTTL = time.Duration(v.i) * time.Second; return nil }},
		{Name: "cache_key", Kind: KindString, MaxLength: MaxCacheKey,
			Description: "Groups cached screenshots: the same options with another cache_key are another entry.",
			apply:       func(o *Options, v value) error { o.CacheKey = v.s; return nil }},
		{Name: "headers", Kind: KindString, MaxLength: MaxHeadersLength,
			Description: "Extra request headers, one `Name: Value` per line. Host, Content-Length and hop-by-hop headers are refused.",
			apply:       applyHeaders},
		{Name: "cookies", Kind: KindString, MaxLength: MaxCookiesLength,
			Description: "Cookies in Set-Cookie syntax, one per line. Without Domain a cookie belongs to the target's host.",
			apply:       applyCookies},
		{Name: "bypass_csp", Kind: KindBoolean, Default: false,
			Description: "Bypass the page's Content Security Policy; every use is logged.",
			apply:       func(o *Options, v value) error { o.BypassCSP = v.b; return nil }},
	}
}

// Parser validates queries against a parameter table.
type Parser struct {
	params []Param
	byName map[string]*Param
}

// NewParser returns a parser for the limits.
func NewParser(l Limits) *Parser {
	p := &Parser{params: Params(l), byName: map[string]*Param{}}
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
		if len(q[name]) > 1 {
			return nil, "", Errorf(EINVALID, "parameter %s is given more than once", name)
		}
	}
	o := &Options{}
	var key string
	for i := range p.params {
		prm := &p.params[i]
		raw, present := "", false
		if vs := q[prm.Name]; len(vs) == 1 && vs[0] != "" {
			raw, present = vs[0], true
		}
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
	for i := range o.Cookies {
		if o.Cookies[i].Domain == "" {
			u, _ := url.Parse(o.URL)
			o.Cookies[i].Domain = u.Hostname()
		}
	}
	return o, key, nil
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
