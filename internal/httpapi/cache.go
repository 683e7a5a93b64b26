package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shutterhq/shutter/internal/metrics"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// Locker takes short cross-replica locks. ok is false when another holder
// has the lock.
type Locker interface {
	Lock(ctx context.Context, name string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// serveCached answers an is_cached request: from the store when it can,
// else by one render that every concurrent identical request shares.
// Hits take no render slot and no quota.
func (s *Server) serveCached(w http.ResponseWriter, r *http.Request, key *screenshot.Key, limits screenshot.PlanLimits, o *screenshot.Options) error {
	ctx := r.Context()
	id := screenshot.CacheID(o, key.ID)
	if e := s.cacheGet(ctx, id); e != nil {
		// A hit is served only while the policy still lets the target
		// through (an allow-list may have changed since the render). Only
		// a refusal counts: a name that stopped resolving keeps its cached
		// image. A miss is checked by the render itself, once.
		if err := s.hitPolicy.check(ctx, s.Guard, o); err != nil {
			return err
		}
		return s.writeCached(w, r, e, "HIT")
	}
	// The render goes on for the others if the first client goes away.
	ch := s.flight.DoChan(id, func() (any, error) {
		return s.fill(context.WithoutCancel(ctx), id, key, limits, o)
	})
	select {
	case <-ctx.Done():
		return &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the request was canceled", Err: ctx.Err()}
	case res := <-ch:
		if res.Err != nil {
			return res.Err
		}
		f := res.Val.(filled)
		outcome := "MISS"
		if f.fromStore {
			outcome = "HIT"
		}
		return s.writeCached(w, r, f.entry, outcome)
	}
}

type filled struct {
	entry     *screenshot.CacheEntry
	fromStore bool // another replica rendered it
}

// fill renders and stores one entry. With a Locker, only the replica that
// holds the entry's lock renders; the others wait for the entry to appear.
func (s *Server) fill(ctx context.Context, id string, key *screenshot.Key, limits screenshot.PlanLimits, o *screenshot.Options) (filled, error) {
	if s.Lock != nil {
		lockTTL := s.HoldTTL
		unlock, ok, err := s.Lock.Lock(ctx, "fill:"+id, lockTTL)
		switch {
		case err != nil:
			s.log.WarnContext(ctx, "cache fill lock unavailable; rendering", "err", err)
		case ok:
			defer unlock()
			// It may have been filled between our miss and the lock.
			if e := s.cacheGet(ctx, id); e != nil {
				return filled{entry: e, fromStore: true}, nil
			}
		default:
			if e := s.waitFill(ctx, id, lockTTL); e != nil {
				return filled{entry: e, fromStore: true}, nil
			}
		}
	}
	img, err := s.render(ctx, key, limits, o)
	if err != nil {
		return filled{}, err
	}
	e := &screenshot.CacheEntry{Data: img.Data, Format: img.Format, ETag: screenshot.ETagOf(img.Data), Expires: time.Now().Add(o.CacheTTL),
		Truncated: img.Truncated}
	if err := s.Cache.Put(ctx, id, e); err != nil {
		s.count(func(m *metrics.Metrics) { m.CacheRequests.WithLabelValues("error").Inc() })
		s.log.WarnContext(ctx, "cache store failed; served uncached", "err", err)
	}
	return filled{entry: e}, nil
}

// waitFill polls the store while another replica renders the entry.
func (s *Server) waitFill(ctx context.Context, id string, max time.Duration) *screenshot.CacheEntry {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		if e := s.cacheGet(ctx, id); e != nil {
			return e
		}
		// The holder gave up (its render failed): render here.
		if unlock, ok, err := s.Lock.Lock(ctx, "fill:"+id, time.Second); err == nil && ok {
			unlock()
			return nil
		}
	}
	return nil
}

// cacheGet returns the entry, or nil on a miss or a store failure (which is
// logged and counted: the request goes on uncached).
func (s *Server) cacheGet(ctx context.Context, id string) *screenshot.CacheEntry {
	e, err := s.Cache.Get(ctx, id)
	switch {
	case err == nil:
		s.count(func(m *metrics.Metrics) { m.CacheRequests.WithLabelValues("hit").Inc() })
		return e
	case screenshot.ErrorCode(err) == screenshot.ENOTFOUND:
		s.count(func(m *metrics.Metrics) { m.CacheRequests.WithLabelValues("miss").Inc() })
	default:
		s.count(func(m *metrics.Metrics) { m.CacheRequests.WithLabelValues("error").Inc() })
		s.log.WarnContext(ctx, "cache read failed; rendering", "err", err)
	}
	return nil
}

// writeCached answers with a cached entry: the headers of a fresh render,
// max-age of the remaining TTL, ETag and X-Cache; 304 when If-None-Match
// names the entry.
func (s *Server) writeCached(w http.ResponseWriter, r *http.Request, e *screenshot.CacheEntry, outcome string) error {
	reqInfo(r.Context()).cache = outcome
	h := w.Header()
	h.Set("ETag", e.ETag)
	h.Set("X-Cache", outcome)
	remaining := time.Until(e.Expires)
	if etagMatch(r.Header.Get("If-None-Match"), e.ETag) {
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(max(remaining, 0)/time.Second)))
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	writeImage(w, &screenshot.Image{Data: e.Data, Format: e.Format, Truncated: e.Truncated}, remaining)
	return nil
}

// etagMatch implements If-None-Match: a list of tags, weak or strong, or *.
func etagMatch(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// policyMemo remembers, for a short time, the outbound policy's answer for
// the hosts of cache hits, so that a hit costs no DNS lookup each time.
// The policy itself changes only with the settings (a restart, which
// empties the memo); what the memo lets lag is a name that starts
// resolving to a refused address, by at most policyMemoTTL.
type policyMemo struct {
	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	err   error
	until time.Time
}

const policyMemoTTL = 30 * time.Second

func (p *policyMemo) check(ctx context.Context, g Guard, o *screenshot.Options) error {
	if _, err := netip.ParseAddr(o.Host()); err == nil {
		return refusal(g.CheckURL(ctx, o.URL)) // a parse: nothing to remember
	}
	key := o.Target.Scheme + "://" + o.Target.Host
	now := time.Now()
	p.mu.Lock()
	e, ok := p.m[key]
	p.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.err
	}
	err := refusal(g.CheckURL(ctx, o.URL))
	p.mu.Lock()
	if p.m == nil || len(p.m) > 10000 {
		p.m = map[string]memoEntry{}
	}
	p.m[key] = memoEntry{err: err, until: now.Add(policyMemoTTL)}
	p.mu.Unlock()
	return err
}

// refusal keeps only a refusal of the policy: a name that stopped
// resolving keeps its cached image.
func refusal(err error) error {
	if screenshot.ErrorCode(err) != screenshot.EINVALID {
		return nil
	}
	return err
}
