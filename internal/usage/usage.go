// Package usage meters the monthly quota around renders: a unit is held
// before a render, committed when an image comes out (retried through a
// store outage while the hold lives), and released when none does.
package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Meter holds, commits and releases quota units in a QuotaStore.
type Meter struct {
	Store screenshot.QuotaStore
	// HoldTTL is how long a hold outlives a crashed process.
	HoldTTL time.Duration
	Log     *slog.Logger
	// OnExhausted, when set, is told of each request refused for its quota.
	OnExhausted func()

	settling sync.WaitGroup // commits retrying in the background
}

// Reserve holds one unit of the key's monthly quota. It returns "" when
// there is no store (nothing is metered).
func (m *Meter) Reserve(ctx context.Context, key *screenshot.Key, limits screenshot.PlanLimits) (string, error) {
	if m == nil || m.Store == nil {
		return "", nil
	}
	period, resets := screenshot.PeriodOf(time.Now())
	hold, err := m.Store.Reserve(ctx, key.ID, period, limits.Quota, m.HoldTTL)
	switch {
	case errors.Is(err, screenshot.ErrQuotaExhausted):
		if m.OnExhausted != nil {
			m.OnExhausted()
		}
		return "", &screenshot.Error{Code: screenshot.EFORBIDDEN, Err: screenshot.ErrQuotaExhausted,
			Message: fmt.Sprintf("the monthly quota of %d screenshots is exhausted; it resets at %s", limits.Quota, resets.Format(time.RFC3339))}
	case err != nil:
		return "", &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the usage store is unavailable; try again shortly",
			RetryAfter: 5 * time.Second, Err: err}
	}
	return hold, nil
}

// Settle commits the hold of a successful render and releases that of a
// failed one. It runs after the client may be gone, so it does not use the
// request's cancellation.
func (m *Meter) Settle(ctx context.Context, hold string, ok bool) {
	if hold == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if !ok {
		// A release that fails costs nothing: the hold expires and its unit
		// returns by itself.
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := m.Store.Release(rctx, hold); err != nil {
			m.Log.WarnContext(ctx, "release quota hold; it will expire", "err", err)
		}
		return
	}
	if m.commit(ctx, hold) {
		return
	}
	// The image is out: its unit must be counted. Retry while the hold
	// lives (a database outage), in the background.
	m.settling.Add(1)
	go func() {
		defer m.settling.Done()
		deadline := time.Now().Add(max(m.HoldTTL/2, time.Second))
		for wait := 250 * time.Millisecond; time.Now().Before(deadline); wait = min(wait*2, 5*time.Second) {
			time.Sleep(wait)
			if m.commit(ctx, hold) {
				return
			}
		}
		m.Log.ErrorContext(ctx, "quota unit not counted: the usage store stayed unreachable")
	}()
}

// commit reports whether the hold is settled (committed, or gone for good).
func (m *Meter) commit(ctx context.Context, hold string) bool {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := m.Store.Commit(cctx, hold)
	switch {
	case err == nil:
		return true
	case errors.Is(err, screenshot.ErrHoldGone):
		m.Log.ErrorContext(ctx, "quota hold expired before its render was counted")
		return true
	default:
		m.Log.WarnContext(ctx, "commit quota; retrying", "err", err)
		return false
	}
}

// Wait waits for background commits, at most d.
func (m *Meter) Wait(d time.Duration) {
	if m == nil {
		return
	}
	done := make(chan struct{})
	go func() { m.settling.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
