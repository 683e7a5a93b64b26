package embedded

import (
	"context"
	"sync"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Limiter is the in-process rate limiter: fixed windows per key, exact within
// one process.
type Limiter struct {
	mu      sync.Mutex
	windows map[string]*window
	sweep   time.Time
}

type window struct {
	end   time.Time
	count int
}

var _ screenshot.Limiter = (*Limiter)(nil)

// NewLimiter returns an empty limiter.
func NewLimiter() *Limiter { return &Limiter{windows: map[string]*window{}} }

// Allow counts one request of id.
func (l *Limiter) Allow(ctx context.Context, id string, limit int, length time.Duration) (screenshot.RateState, error) {
	now := time.Now()
	_, end := screenshot.WindowOf(now, length)
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.sweep) { // drop finished windows now and then
		for k, w := range l.windows {
			if !now.Before(w.end) {
				delete(l.windows, k)
			}
		}
		l.sweep = now.Add(length)
	}
	w := l.windows[id]
	if w == nil || !w.end.Equal(end) {
		w = &window{end: end}
		l.windows[id] = w
	}
	w.count++
	return screenshot.RateState{Allowed: w.count <= limit, Limit: limit, Remaining: max(0, limit-w.count), Reset: end}, nil
}
