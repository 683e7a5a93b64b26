// Package screenshot is the domain of Shutter: the validated options of one
// screenshot, the errors with codes that every layer speaks, and the
// interfaces that the adapters implement. It does no I/O.
package screenshot

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Format is an output image format.
type Format string

const (
	JPEG Format = "jpeg"
	PNG  Format = "png"
	WebP Format = "webp"
	PDF  Format = "pdf" // the page printed, not an image
)

// ContentType is the MIME type of the format.
func (f Format) ContentType() string {
	switch f {
	case PNG:
		return "image/png"
	case WebP:
		return "image/webp"
	case PDF:
		return "application/pdf"
	default:
		return "image/jpeg"
	}
}

// Header is one custom request header.
type Header struct {
	Name  string
	Value string
}

// Rect is a rectangle of the page in CSS pixels.
type Rect struct {
	X, Y, Width, Height int
}

// Options is everything that decides what a screenshot looks like. It is
// parsed once from the query and then travels through every step unchanged.
//
// Every field carries a `cache` tag: the name under which it enters the
// cache identity (CacheID), or "-" for a field that cannot change the
// output. A test fails for a field without one, so a new option cannot be
// forgotten in the identity.
type Options struct {
	URL    string   `cache:"u"` // normalised: lower-case scheme and host
	Target *url.URL `cache:"-"` // URL, parsed once

	Width             int     `cache:"w"`
	Height            int     `cache:"h"`
	DeviceScaleFactor float64 `cache:"s"`
	IsMobile          bool    `cache:"m"`
	IsLandscape       bool    `cache:"l"`
	HasTouch          bool    `cache:"t"`
	UserAgent         string  `cache:"ua"`

	Format   Format `cache:"f"`
	Quality  int    `cache:"q"`
	Selector string `cache:"sel"`

	// FullPage captures the whole document, at most FullPageMaxHeight CSS
	// pixels of it; FullPageScroll first scrolls through it for
	// FullPageScrollDuration so that lazy content loads.
	FullPage               bool          `cache:"fp"`
	FullPageScroll         bool          `cache:"fps"`
	FullPageScrollDuration time.Duration `cache:"fpsd"`
	FullPageMaxHeight      int           `cache:"fpmh"`
	// Clip is the rectangle of the page to capture; nil captures the
	// viewport (or the whole page, or the selector's element).
	Clip *Rect `cache:"clip"`
	// ImageWidth and ImageHeight scale the output; 0 keeps the captured size
	// (or the aspect ratio, when the other is given).
	ImageWidth     int    `cache:"iw"`
	ImageHeight    int    `cache:"ih"`
	OmitBackground bool   `cache:"ob"`
	MediaType      string `cache:"mt"` // screen | print
	TimeZone       string `cache:"tz"`

	// WaitUntil is the navigation milestone: load, domcontentloaded,
	// networkidle0 or networkidle2.
	WaitUntil       string        `cache:"wu"`
	WaitForSelector string        `cache:"wfs"`
	Delay           time.Duration `cache:"d"`
	Click           string        `cache:"click"`
	HideSelectors   []string      `cache:"hide"`
	Styles          string        `cache:"css"`
	Scripts         string        `cache:"js"`

	PDFPaperFormat     string `cache:"pdfp"`
	PDFLandscape       bool   `cache:"pdfl"`
	PDFPrintBackground bool   `cache:"pdfb"`

	BlockAds           bool     `cache:"ba"`
	BlockCookieBanners bool     `cache:"bc"`
	BlockTrackers      bool     `cache:"bt"`
	BlockRequests      []string `cache:"br"`
	BlockResources     []string `cache:"bres"`

	ColorScheme   string `cache:"cs"` // light | dark
	ReducedMotion string `cache:"rm"` // no-preference | reduce

	Cached   bool          `cache:"-"`
	CacheTTL time.Duration `cache:"-"`
	CacheKey string        `cache:"ck"`

	Headers   []Header       `cache:"hd"`
	Cookies   []*http.Cookie `cache:"ck2"`
	BypassCSP bool           `cache:"csp"`

	// AllowedDomains are the key's domains: every main-frame navigation of
	// the page must stay within them. Set from the key, not from the query,
	// and not part of the cache identity.
	AllowedDomains []string `cache:"-"`
}

// Host is the target's host name, without port.
func (o *Options) Host() string {
	if o.Target == nil {
		if u, err := url.Parse(o.URL); err == nil {
			return u.Hostname()
		}
		return ""
	}
	return o.Target.Hostname()
}

// normalized returns a copy of o in which the settings that the other
// settings make irrelevant are zeroed, so that they do not split the cache.
func (o *Options) normalized() Options {
	n := *o
	if n.Format == PNG || n.Format == PDF {
		n.Quality = 0
	}
	if !n.IsMobile {
		n.IsLandscape = false
	}
	if n.Format == PDF {
		n.FullPage = true // a PDF is the whole document
		n.FullPageMaxHeight = 0
	} else {
		n.PDFPaperFormat, n.PDFLandscape, n.PDFPrintBackground = "", false, false
	}
	if !n.FullPage {
		n.FullPageScroll, n.FullPageMaxHeight = false, 0
	}
	if !n.FullPageScroll {
		n.FullPageScrollDuration = 0
	}
	return n
}

// Image is a rendered screenshot.
type Image struct {
	Data   []byte
	Format Format
	// Truncated is set when a full-page capture was cut at its maximum
	// height.
	Truncated bool
}

// Renderer turns options into an image.
type Renderer interface {
	Render(ctx context.Context, o *Options) (*Image, error)
}

type requestIDKey struct{}

// WithRequestID puts the request id in ctx, so that every layer can log it.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id of ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// ContentCategories are the content-filter categories that o enables.
func (o *Options) ContentCategories() []string {
	var out []string
	if o.BlockAds {
		out = append(out, "ads")
	}
	if o.BlockTrackers {
		out = append(out, "trackers")
	}
	if o.BlockCookieBanners {
		out = append(out, "cookies")
	}
	return out
}
