package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// serveCached answers an is_cached request: from the store when it can,
// else by one render that every concurrent identical request (and, with a
// lock, every replica) shares. Hits take no render slot and no quota.
func (s *Server) serveCached(w http.ResponseWriter, r *http.Request, key *screenshot.Key, limits screenshot.PlanLimits, o *screenshot.Options) error {
	ctx := r.Context()
	id := screenshot.CacheID(o, key.ID)
	if e := s.filler.Get(ctx, id); e != nil {
		// A hit is served only while the policy still lets the target
		// through (an allow-list may have changed since the render). Only
		// a refusal counts: a name that stopped resolving keeps its cached
		// image. A miss is checked by the render itself, once.
		if err := s.hitPolicy.check(ctx, s.Guard, o); err != nil {
			return err
		}
		return s.writeCached(w, r, e, "HIT")
	}
	e, fromStore, err := s.filler.Fill(ctx, id, o.CacheTTL, func(ctx context.Context) (*screenshot.Image, error) {
		return s.render(ctx, key, limits, o)
	})
	if err != nil {
		return err
	}
	outcome := "MISS"
	if fromStore {
		outcome = "HIT"
	}
	return s.writeCached(w, r, e, outcome)
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

func (p *policyMemo) check(ctx context.Context, g screenshot.Guard, o *screenshot.Options) error {
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
