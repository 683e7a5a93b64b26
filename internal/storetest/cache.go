package storetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

func entry(data string, ttl time.Duration) *screenshot.CacheEntry {
	return &screenshot.CacheEntry{Data: []byte(data), Format: screenshot.PNG, ETag: screenshot.ETagOf([]byte(data)), Expires: time.Now().Add(ttl)}
}

func cacheID(n int) string { return fmt.Sprintf("%064x", time.Now().UnixNano()+int64(n)) }

// RunCache tests a screenshot cache.
func RunCache(t *testing.T, c screenshot.Cache) {
	ctx := context.Background()
	t.Run("round trip", func(t *testing.T) {
		id := cacheID(1)
		if _, err := c.Get(ctx, id); screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
			t.Fatalf("missing entry: %v, want ENOTFOUND", err)
		}
		want := entry("\x89PNG image bytes", time.Hour)
		if err := c.Put(ctx, id, want); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Data, want.Data) || got.Format != screenshot.PNG || got.ETag != want.ETag ||
			got.Expires.Sub(want.Expires).Abs() > time.Second {
			t.Errorf("got %+v, want %+v", got, want)
		}
		if got.Truncated {
			t.Error("an entry came back truncated")
		}
		// Overwriting replaces; the truncation mark travels with the entry.
		cut := entry("second", time.Hour)
		cut.Truncated = true
		if err := c.Put(ctx, id, cut); err != nil {
			t.Fatal(err)
		}
		if got, _ := c.Get(ctx, id); got == nil || string(got.Data) != "second" || !got.Truncated {
			t.Errorf("after overwrite: %+v", got)
		}
	})
	t.Run("expired entries are never served", func(t *testing.T) {
		id := cacheID(2)
		if err := c.Put(ctx, id, entry("short", 300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(ctx, id); err != nil {
			t.Fatalf("fresh entry: %v", err)
		}
		time.Sleep(400 * time.Millisecond)
		if e, err := c.Get(ctx, id); screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
			t.Errorf("expired entry: %+v %v", e, err)
		}
	})
	t.Run("concurrent writers and readers", func(t *testing.T) {
		id := cacheID(3)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				data := bytes.Repeat([]byte{byte('a' + i)}, 64<<10)
				c.Put(ctx, id, &screenshot.CacheEntry{Data: data, Format: screenshot.JPEG, ETag: screenshot.ETagOf(data), Expires: time.Now().Add(time.Hour)})
			})
			wg.Go(func() {
				if e, err := c.Get(ctx, id); err == nil {
					// Whatever is read is one whole entry, never a mix.
					if screenshot.ETagOf(e.Data) != e.ETag || len(e.Data) != 64<<10 || bytes.Count(e.Data, e.Data[:1]) != len(e.Data) {
						t.Error("read a torn entry")
					}
				}
			})
		}
		wg.Wait()
	})
}
