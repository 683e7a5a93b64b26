// Package queue is the bounded admission in front of the browsers: a fixed
// number of render slots handed out first come, first served, a bounded
// number of waiters, and counters that health and metrics read.
package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// ErrFull is returned when the wait line is already at its limit.
var ErrFull = errors.New("queue full")

// ErrTimeout is returned when no slot became free within the wait limit.
var ErrTimeout = errors.New("queue wait timed out")

// Stats is a snapshot of the queue.
type Stats struct {
	Slots     int   `json:"slots"`
	Waiting   int64 `json:"waiting"`
	Active    int64 `json:"active"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Rejected  int64 `json:"rejected"`
}

// Queue hands out render slots. Its zero value is not usable; see New.
type Queue struct {
	sem        *semaphore.Weighted // FIFO: waiters are served in order
	slots      int
	maxWaiting int64
	wait       time.Duration

	waiting, active, completed, failed, rejected atomic.Int64
}

// New returns a queue with slots render slots, at most maxWaiting waiters,
// and a wait of at most wait for a slot.
func New(slots, maxWaiting int, wait time.Duration) *Queue {
	return &Queue{sem: semaphore.NewWeighted(int64(slots)), slots: slots, maxWaiting: int64(maxWaiting), wait: wait}
}

// Acquire waits for a slot. The returned release must be called exactly once
// with whether the job succeeded.
func (q *Queue) Acquire(ctx context.Context) (release func(ok bool), err error) {
	if !q.sem.TryAcquire(1) {
		if q.waiting.Add(1) > q.maxWaiting {
			q.waiting.Add(-1)
			q.rejected.Add(1)
			return nil, ErrFull
		}
		wctx, cancel := context.WithTimeout(ctx, q.wait)
		err := q.sem.Acquire(wctx, 1)
		cancel()
		q.waiting.Add(-1)
		if err != nil {
			q.rejected.Add(1)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, ErrTimeout
		}
	}
	q.active.Add(1)
	var done atomic.Bool
	return func(ok bool) {
		if !done.CompareAndSwap(false, true) {
			return
		}
		q.active.Add(-1)
		if ok {
			q.completed.Add(1)
		} else {
			q.failed.Add(1)
		}
		q.sem.Release(1)
	}, nil
}

// Stats returns the current counts.
func (q *Queue) Stats() Stats {
	return Stats{
		Slots:     q.slots,
		Waiting:   q.waiting.Load(),
		Active:    q.active.Load(),
		Completed: q.completed.Load(),
		Failed:    q.failed.Load(),
		Rejected:  q.rejected.Load(),
	}
}

// RetryAfter is a hint for clients that were turned away.
func (q *Queue) RetryAfter() time.Duration { return 2 * time.Second }
