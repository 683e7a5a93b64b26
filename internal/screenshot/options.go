// Package screenshot is the domain of Shutter: the validated options of one
// screenshot, the errors with codes that every layer speaks, and the
// interfaces that the adapters implement. It does no I/O.
package screenshot

import (
	"context"
	"net/http"
	"time"
)

// Format is an output image format.
type Format string

const (
	JPEG Format = "jpeg"
	PNG  Format = "png"
	WebP Format = "webp"
)

// ContentType is the MIME type of the format.
func (f Format) ContentType() string {
	switch f {
	case PNG:
		return "image/png"
	case WebP:
		return "image/webp"
	default:
		return "image/jpeg"
	}
}

// Header is one custom request header.
type Header struct {
	Name  string
	Value string
}

// Options is everything that decides what a screenshot looks like. It is
// parsed once from the query and then travels through every step unchanged.
type Options struct {
	URL string // normalised: lower-case scheme and host

	Width, Height     int
	DeviceScaleFactor float64
	IsMobile          bool
	IsLandscape       bool
	HasTouch          bool
	UserAgent         string

	Format   Format
	Quality  int
	Selector string

	BlockAds           bool
	BlockCookieBanners bool
	BlockTrackers      bool
	BlockRequests      []string
	BlockResources     []string

	ColorScheme   string // light | dark
	ReducedMotion string // no-preference | reduce

	Cached   bool
	CacheTTL time.Duration
	CacheKey string

	Headers   []Header
	Cookies   []*http.Cookie
	BypassCSP bool

	// AllowedDomains are the key's domains: every main-frame navigation of
	// the page must stay within them. Set from the key, not from the query,
	// and not part of the cache identity.
	AllowedDomains []string
}

// Image is a rendered screenshot.
type Image struct {
	Data   []byte
	Format Format
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
