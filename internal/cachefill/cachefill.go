// Package cachefill fills the screenshot cache once per entry: concurrent
// identical requests of one process share one render, and with a
// cross-replica lock, replicas share it too (the one that holds the
// entry's lock renders; the others wait for the entry to appear in the
// store).
package cachefill

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Filler reads and fills one cache.
type Filler struct {
	Cache screenshot.Cache
	// Lock, when set, coordinates replicas; nil renders in each.
	Lock screenshot.Locker
	// LockTTL bounds how long a replica holds an entry's lock, and how long
	// the others wait for it.
	LockTTL time.Duration
	Log     *slog.Logger
	// OnRead, when set, is told of each store read: hit, miss or error.
	OnRead func(result string)

	flight singleflight.Group
}

// Render makes the image of a missing entry.
type Render func(ctx context.Context) (*screenshot.Image, error)

// Get returns the entry, or nil on a miss or a store failure (logged and
// counted: the request goes on uncached).
func (f *Filler) Get(ctx context.Context, id string) *screenshot.CacheEntry {
	e, err := f.Cache.Get(ctx, id)
	switch {
	case err == nil:
		f.read("hit")
		return e
	case screenshot.ErrorCode(err) == screenshot.ENOTFOUND:
		f.read("miss")
	default:
		f.read("error")
		f.Log.WarnContext(ctx, "cache read failed; rendering", "err", err)
	}
	return nil
}

func (f *Filler) read(result string) {
	if f.OnRead != nil {
		f.OnRead(result)
	}
}

// Fill returns the entry id after one render shared by every concurrent
// caller (stored for ttl). fromStore is true when another replica rendered
// it. The render goes on for the others when ctx ends.
func (f *Filler) Fill(ctx context.Context, id string, ttl time.Duration, render Render) (e *screenshot.CacheEntry, fromStore bool, err error) {
	type filled struct {
		entry     *screenshot.CacheEntry
		fromStore bool
	}
	ch := f.flight.DoChan(id, func() (any, error) {
		e, fromStore, err := f.fill(context.WithoutCancel(ctx), id, ttl, render)
		return filled{e, fromStore}, err
	})
	select {
	case <-ctx.Done():
		return nil, false, &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the request was canceled", Err: ctx.Err()}
	case res := <-ch:
		if res.Err != nil {
			return nil, false, res.Err
		}
		v := res.Val.(filled)
		return v.entry, v.fromStore, nil
	}
}

// fill renders and stores one entry, or with a Lock, waits for the replica
// that holds the entry's lock.
func (f *Filler) fill(ctx context.Context, id string, ttl time.Duration, render Render) (*screenshot.CacheEntry, bool, error) {
	if f.Lock != nil {
		unlock, ok, err := f.Lock.Lock(ctx, "fill:"+id, f.LockTTL)
		switch {
		case err != nil:
			f.Log.WarnContext(ctx, "cache fill lock unavailable; rendering", "err", err)
		case ok:
			defer unlock()
			// It may have been filled between our miss and the lock.
			if e := f.Get(ctx, id); e != nil {
				return e, true, nil
			}
		default:
			if e := f.wait(ctx, id); e != nil {
				return e, true, nil
			}
		}
	}
	img, err := render(ctx)
	if err != nil {
		return nil, false, err
	}
	e := &screenshot.CacheEntry{Data: img.Data, Format: img.Format, ETag: screenshot.ETagOf(img.Data), Expires: time.Now().Add(ttl),
		Truncated: img.Truncated}
	if err := f.Cache.Put(ctx, id, e); err != nil {
		f.read("error")
		f.Log.WarnContext(ctx, "cache store failed; served uncached", "err", err)
	}
	return e, false, nil
}

// wait polls the store while another replica renders the entry; nil when
// the holder gave up (its render failed) or the wait ran out: render here.
func (f *Filler) wait(ctx context.Context, id string) *screenshot.CacheEntry {
	deadline := time.Now().Add(f.LockTTL)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		if e := f.Get(ctx, id); e != nil {
			return e
		}
		if unlock, ok, err := f.Lock.Lock(ctx, "fill:"+id, time.Second); err == nil && ok {
			unlock()
			return nil
		}
	}
	return nil
}
