package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// DirCache keeps screenshots as files in a directory: a one-line JSON header
// (format, ETag, expiry) and the image. A file is written under a temporary
// name and renamed into place, so a half-written entry is never read.
type DirCache struct {
	dir string
	log *slog.Logger
}

var _ screenshot.Cache = (*DirCache)(nil)

type fileHeader struct {
	Format  screenshot.Format `json:"f"`
	ETag    string            `json:"e"`
	Expires int64             `json:"x"` // unix nanoseconds
	Cut     bool              `json:"t,omitempty"`
}

// OpenCache uses dir (created when missing).
func OpenCache(dir string, log *slog.Logger) (*DirCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	return &DirCache{dir: dir, log: log}, nil
}

func (c *DirCache) path(id string) (string, error) {
	if len(id) < 8 || strings.ContainsAny(id, `/\.`) {
		return "", fmt.Errorf("invalid cache id %q", id)
	}
	return filepath.Join(c.dir, id[:2], id+".img"), nil
}

// Get reads an entry; a missing, expired or damaged one is ENOTFOUND.
func (c *DirCache) Get(ctx context.Context, id string) (*screenshot.CacheEntry, error) {
	p, err := c.path(id)
	if err != nil {
		return nil, err
	}
	buf, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, screenshot.Errorf(screenshot.ENOTFOUND, "not cached")
	}
	if err != nil {
		return nil, fmt.Errorf("cache read: %w", err)
	}
	head, data, ok := bytes.Cut(buf, []byte("\n"))
	var h fileHeader
	if !ok || json.Unmarshal(head, &h) != nil || screenshot.ETagOf(data) != h.ETag {
		os.Remove(p)
		return nil, screenshot.Errorf(screenshot.ENOTFOUND, "damaged cache entry")
	}
	exp := time.Unix(0, h.Expires)
	if !time.Now().Before(exp) {
		os.Remove(p)
		return nil, screenshot.Errorf(screenshot.ENOTFOUND, "expired")
	}
	return &screenshot.CacheEntry{Data: data, Format: h.Format, ETag: h.ETag, Expires: exp, Truncated: h.Cut}, nil
}

// Put writes an entry.
func (c *DirCache) Put(ctx context.Context, id string, e *screenshot.CacheEntry) error {
	p, err := c.path(id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("cache write: %w", err)
	}
	head, _ := json.Marshal(fileHeader{Format: e.Format, ETag: e.ETag, Expires: e.Expires.UnixNano(), Cut: e.Truncated})
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("cache write: %w", err)
	}
	_, err = f.Write(append(head, '\n'))
	if err == nil {
		_, err = f.Write(e.Data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cache write: %w", err)
	}
	return nil
}

// Sweep deletes expired entries and temporary files left by a crash.
func (c *DirCache) Sweep(ctx context.Context) (removed int, err error) {
	now := time.Now()
	err = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || ctx.Err() != nil {
			return ctx.Err()
		}
		name := d.Name()
		if strings.HasPrefix(name, ".tmp-") || strings.HasPrefix(name, ".ping-") {
			if info, err := d.Info(); err == nil && now.Sub(info.ModTime()) > time.Hour {
				if os.Remove(p) == nil { //nolint:gosec // our own cache directory, written by this process only
					removed++
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".img") {
			return nil
		}
		if _, err := c.Get(ctx, strings.TrimSuffix(name, ".img")); screenshot.ErrorCode(err) == screenshot.ENOTFOUND {
			removed++ // Get removed it
		}
		return nil
	})
	return removed, err
}

// RunSweeper sweeps every interval until ctx ends.
func (c *DirCache) RunSweeper(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := c.Sweep(ctx)
			if err != nil && ctx.Err() == nil {
				c.log.WarnContext(ctx, "cache sweep", "err", err)
			} else if n > 0 {
				c.log.DebugContext(ctx, "cache sweep", "removed", n)
			}
		}
	}
}
