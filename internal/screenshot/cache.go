package screenshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// CacheEntry is a stored screenshot.
type CacheEntry struct {
	Data    []byte
	Format  Format
	ETag    string // quoted, as sent in the header
	Expires time.Time
}

// Cache stores screenshots by identity. Get returns an ENOTFOUND error for
// a missing or expired entry: an expired entry is never returned.
type Cache interface {
	Get(ctx context.Context, id string) (*CacheEntry, error)
	Put(ctx context.Context, id string, e *CacheEntry) error
}

// ETagOf is the entity tag of image bytes.
func ETagOf(data []byte) string {
	h := sha256.Sum256(data)
	return `"` + hex.EncodeToString(h[:16]) + `"`
}

// identity is the normalised form of everything that decides the pixels.
type identity struct {
	Owner          string   `json:"o"`
	CacheKey       string   `json:"ck"`
	URL            string   `json:"u"`
	Width          int      `json:"w"`
	Height         int      `json:"h"`
	Scale          float64  `json:"s"`
	Mobile         bool     `json:"m"`
	Landscape      bool     `json:"l"`
	Touch          bool     `json:"t"`
	UserAgent      string   `json:"ua"`
	Format         Format   `json:"f"`
	Quality        int      `json:"q"`
	Selector       string   `json:"sel"`
	Ads            bool     `json:"ba"`
	Banners        bool     `json:"bc"`
	Trackers       bool     `json:"bt"`
	BlockRequests  []string `json:"br"`
	BlockResources []string `json:"bres"`
	ColorScheme    string   `json:"cs"`
	ReducedMotion  string   `json:"rm"`
	Headers        []string `json:"hd"`
	Cookies        []string `json:"ck2"`
	BypassCSP      bool     `json:"csp"`
}

// CacheID is the identity of a cached screenshot: a hash of the normalised
// options, the cache_key and the owner (the API key), so that the order of
// parameters, spelled-out defaults and settings that cannot change the image
// do not matter, and one key never receives another's image. cache_ttl and
// is_cached are not part of it.
func CacheID(o *Options, owner string) string {
	id := identity{
		Owner: owner, CacheKey: o.CacheKey, URL: o.URL, Width: o.Width, Height: o.Height, Scale: o.DeviceScaleFactor,
		Mobile: o.IsMobile, Landscape: o.IsMobile && o.IsLandscape, Touch: o.HasTouch, UserAgent: o.UserAgent,
		Format: o.Format, Quality: o.Quality, Selector: o.Selector,
		Ads: o.BlockAds, Banners: o.BlockCookieBanners, Trackers: o.BlockTrackers,
		BlockRequests: sortedCopy(o.BlockRequests), BlockResources: sortedCopy(o.BlockResources),
		ColorScheme: o.ColorScheme, ReducedMotion: o.ReducedMotion, BypassCSP: o.BypassCSP,
	}
	if o.Format == PNG {
		id.Quality = 0 // png ignores quality
	}
	for _, h := range o.Headers {
		id.Headers = append(id.Headers, strings.ToLower(h.Name)+":"+h.Value)
	}
	slices.Sort(id.Headers)
	for _, c := range o.Cookies {
		id.Cookies = append(id.Cookies, c.String())
	}
	slices.Sort(id.Cookies)
	buf, _ := json.Marshal(id)
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
