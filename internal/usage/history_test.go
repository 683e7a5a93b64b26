package usage_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/storetest"
	"github.com/shutterhq/shutter/internal/usage"
)

// TestHistoryIsExactAfterClose records from many goroutines and closes at
// once: every event is in the counters and the log.
func TestHistoryIsExactAfterClose(t *testing.T) {
	st, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := storetest.NewKey(t, st, screenshot.PlanFree, 0)
	r := &usage.Recorder{Store: st, Interval: time.Hour, PerKey: 10_000}
	go r.Run()
	outcomes := []usage.Outcome{usage.Succeeded, usage.Failed, usage.CacheHit, usage.Refused, usage.Other}
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			for i := range 100 {
				r.Record(usage.Event{Outcome: outcomes[i%5], Bytes: 10,
					Request: account.Request{KeyID: k.ID, At: time.Now(), Status: 200, RequestID: fmt.Sprint(g, "-", i)}})
			}
		})
	}
	wg.Wait()
	r.Close(10 * time.Second)
	today := time.Now().UTC().Format(time.DateOnly)
	days, err := st.UsageDays(t.Context(), k.ID, today, today)
	if err != nil || len(days) != 1 {
		t.Fatalf("days = %v, %v", days, err)
	}
	d := days[0]
	if d.Succeeded != 200 || d.Failed != 200 || d.CacheHits != 200 || d.Refused != 200 || d.Bytes != 8000 {
		t.Errorf("counters %+v, want 200 of each outcome and 8000 bytes", d)
	}
	if reqs, _ := st.Requests(t.Context(), k.ID, 10_000, 0); len(reqs) != 1000 {
		t.Errorf("request log has %d entries, want 1000", len(reqs))
	}
	if r.Dropped() != 0 {
		t.Errorf("%d dropped", r.Dropped())
	}
}

// TestFullBufferDropsAndCounts: with nothing writing, a full buffer drops
// (and counts) instead of blocking the caller.
func TestFullBufferDropsAndCounts(t *testing.T) {
	var drops int
	r := &usage.Recorder{Buffer: 5, OnDrop: func() { drops++ }}
	done := make(chan struct{})
	go func() {
		for range 12 {
			r.Record(usage.Event{Outcome: usage.Succeeded})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Record blocked on a full buffer")
	}
	if r.Dropped() != 7 || drops != 7 {
		t.Errorf("dropped %d (told %d), want 7", r.Dropped(), drops)
	}
}
