package embedded

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/storetest"
)

func newCache(t testing.TB) *DirCache {
	c, err := OpenCache(filepath.Join(t.TempDir(), "cache"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDirCache(t *testing.T) { storetest.RunCache(t, newCache(t)) }

func TestDirCacheDamagedAndSweep(t *testing.T) {
	c := newCache(t)
	ctx := context.Background()
	id := "abcdef0123456789abcdef0123456789"
	data := []byte("image")
	if err := c.Put(ctx, id, &screenshot.CacheEntry{Data: data, Format: screenshot.PNG, ETag: screenshot.ETagOf(data), Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	p, _ := c.path(id)
	// A truncated file (a crash, a full disk) is a miss, not a broken image.
	buf, _ := os.ReadFile(p)
	os.WriteFile(p, buf[:len(buf)-2], 0o600)
	if _, err := c.Get(ctx, id); screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
		t.Fatalf("damaged entry: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("damaged entry was not removed")
	}
	c.Put(ctx, id+"01", &screenshot.CacheEntry{Data: data, Format: screenshot.PNG, ETag: screenshot.ETagOf(data), Expires: time.Now().Add(-time.Second)})
	c.Put(ctx, id+"02", &screenshot.CacheEntry{Data: data, Format: screenshot.PNG, ETag: screenshot.ETagOf(data), Expires: time.Now().Add(time.Hour)})
	stray := filepath.Join(filepath.Dir(p), ".tmp-stray")
	os.WriteFile(stray, []byte("x"), 0o600)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stray, old, old)
	n, err := c.Sweep(ctx)
	if err != nil || n != 2 {
		t.Errorf("sweep removed %d (%v), want the expired entry and the stray temp file", n, err)
	}
	if _, err := c.Get(ctx, id+"02"); err != nil {
		t.Errorf("sweep removed a live entry: %v", err)
	}
	if _, err := c.path("../../etc"); err == nil {
		t.Error("path accepted a traversal")
	}
}

func BenchmarkDirCacheHit(b *testing.B) {
	c := newCache(b)
	data := make([]byte, 120<<10) // a 1280×720 JPEG is about this size
	id := "0123456789abcdef0123456789abcdef"
	c.Put(context.Background(), id, &screenshot.CacheEntry{Data: data, Format: screenshot.JPEG, ETag: screenshot.ETagOf(data), Expires: time.Now().Add(time.Hour)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Get(context.Background(), id); err != nil {
			b.Fatal(err)
		}
	}
}
