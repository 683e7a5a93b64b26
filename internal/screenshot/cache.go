package screenshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
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
	// Truncated is the image's Truncated.
	Truncated bool
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

// CacheID is the identity of a cached screenshot: a hash of the normalised
// options, the cache_key and the owner (the API key), so that the order of
// parameters, spelled-out defaults and settings that cannot change the image
// do not matter, and one key never receives another's image. The fields and
// their names come from the `cache` tags of Options; cache_ttl and is_cached
// are not part of it.
func CacheID(o *Options, owner string) string {
	n := o.normalized()
	id := map[string]any{"owner": owner}
	v := reflect.ValueOf(&n).Elem()
	for i, f := range reflect.VisibleFields(v.Type()) {
		name := f.Tag.Get("cache")
		if name == "-" {
			continue
		}
		if name == "" {
			// Unreachable while TestEveryOptionInCacheIdentity passes; a
			// field without a tag still counts, under its Go name.
			name = f.Name
		}
		id[name] = identityValue(v.Field(i).Interface())
	}
	buf, _ := json.Marshal(id) // map keys are sorted: a stable encoding
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// identityValue is the order-independent form of a field's value.
func identityValue(x any) any {
	switch x := x.(type) {
	case []string:
		return sortedCopy(x)
	case []Header:
		out := make([]string, 0, len(x))
		for _, h := range x {
			out = append(out, strings.ToLower(h.Name)+":"+h.Value)
		}
		slices.Sort(out)
		return out
	case []*http.Cookie:
		out := make([]string, 0, len(x))
		for _, c := range x {
			out = append(out, c.String())
		}
		slices.Sort(out)
		return out
	case time.Duration:
		return int64(x)
	default:
		return x
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
