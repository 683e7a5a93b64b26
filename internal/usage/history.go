package usage

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shutterhq/shutter/internal/account"
)

// Outcome is how a request of a key ended, for the daily counters.
type Outcome int

const (
	Other     Outcome = iota // in the request log only (a bad parameter, a refused domain)
	Succeeded                // a render that produced an image
	Failed                   // a render that did not
	CacheHit                 // served from the cache
	Refused                  // rate limit or quota
)

// Event is one request of a key.
type Event struct {
	Outcome Outcome
	Request account.Request
	Bytes   int64
}

// HistoryStore is where the history is written.
type HistoryStore interface {
	AddUsage(ctx context.Context, days []account.Day) error
	AddRequests(ctx context.Context, reqs []account.Request, perKey int) error
	PruneRequests(ctx context.Context, before time.Time) error
}

// Recorder keeps the usage history off the request path: Record hands an
// event to a buffer and returns; Run adds the events up and writes them
// every Interval. A full buffer drops the event and counts it, never
// blocking a request. Close writes what is left.
type Recorder struct {
	Store     HistoryStore
	Interval  time.Duration // between writes; default 2 s
	Buffer    int           // events waiting at most; default 10 000
	PerKey    int           // request-log entries kept per key; default 1000
	Retention time.Duration // request-log age kept; default 7 days
	Log       *slog.Logger
	// OnDrop, when set, is told of each event dropped for a full buffer.
	OnDrop func()

	once    sync.Once
	events  chan Event
	dropped atomic.Int64
	stop    chan struct{}
	done    chan struct{}

	// pending is what a failed write left for the next one.
	days map[[2]string]*account.Day
	reqs []account.Request
}

func (r *Recorder) init() {
	r.once.Do(func() {
		r.Interval = or(r.Interval, 2*time.Second)
		r.Buffer = or(r.Buffer, 10_000)
		r.PerKey = or(r.PerKey, 1000)
		r.Retention = or(r.Retention, 7*24*time.Hour)
		if r.Log == nil {
			r.Log = slog.New(slog.DiscardHandler)
		}
		r.events = make(chan Event, r.Buffer)
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		r.days = map[[2]string]*account.Day{}
	})
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Record hands over one event without waiting.
func (r *Recorder) Record(e Event) {
	if r == nil {
		return
	}
	r.init()
	select {
	case r.events <- e:
	default:
		r.dropped.Add(1)
		if r.OnDrop != nil {
			r.OnDrop()
		}
	}
}

// Dropped is the number of events dropped for a full buffer.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Run writes the history until Close.
func (r *Recorder) Run() {
	r.init()
	defer close(r.done)
	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	r.prune()
	for {
		select {
		case e := <-r.events:
			r.add(e)
		case <-tick.C:
			r.flush()
		case <-prune.C:
			r.prune()
		case <-r.stop:
			for {
				select {
				case e := <-r.events:
					r.add(e)
				default:
					r.flush()
					return
				}
			}
		}
	}
}

// Close writes what is buffered and stops Run, waiting at most d.
func (r *Recorder) Close(d time.Duration) {
	if r == nil {
		return
	}
	r.init()
	select {
	case <-r.stop:
		return
	default:
		close(r.stop)
	}
	select {
	case <-r.done:
	case <-time.After(d):
		r.Log.Warn("usage history not written before shutdown")
	}
}

func (r *Recorder) add(e Event) {
	req := e.Request
	r.reqs = append(r.reqs, req)
	if len(r.reqs) > r.Buffer { // a store down for long: keep the newest
		r.reqs = r.reqs[len(r.reqs)-r.Buffer:]
	}
	if e.Outcome == Other {
		return
	}
	date := req.At.UTC().Format(time.DateOnly)
	d := r.days[[2]string{req.KeyID, date}]
	if d == nil {
		d = &account.Day{KeyID: req.KeyID, Date: date}
		r.days[[2]string{req.KeyID, date}] = d
	}
	switch e.Outcome {
	case Succeeded:
		d.Succeeded++
	case Failed:
		d.Failed++
	case CacheHit:
		d.CacheHits++
	case Refused:
		d.Refused++
	}
	d.Bytes += e.Bytes
}

// flush writes the counters and the log. The counters are kept for the
// next try when their write fails (they are small); so is the log, up to
// the buffer size.
func (r *Recorder) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if len(r.days) > 0 {
		days := make([]account.Day, 0, len(r.days))
		for _, d := range r.days {
			days = append(days, *d)
		}
		if err := r.Store.AddUsage(ctx, days); err != nil {
			r.Log.Warn("usage history: counters not written; retrying", "err", err)
		} else {
			clear(r.days)
		}
	}
	if len(r.reqs) > 0 {
		if err := r.Store.AddRequests(ctx, r.reqs, r.PerKey); err != nil {
			r.Log.Warn("usage history: request log not written; retrying", "err", err)
		} else {
			r.reqs = r.reqs[:0]
		}
	}
}

func (r *Recorder) prune() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Store.PruneRequests(ctx, time.Now().Add(-r.Retention)); err != nil {
		r.Log.Warn("usage history: old request-log entries not pruned", "err", err)
	}
}
