package usage

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// TestMeter runs the meter on the embedded store: a render that succeeds
// costs one unit, one that fails costs none, and the quota refuses the
// request after it, saying when it resets.
func TestMeter(t *testing.T) {
	st, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	key := &screenshot.Key{ID: screenshot.NewKeyID(), Hash: "h", Plan: screenshot.PlanFree, CreatedAt: time.Now()}
	if err := st.CreateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	exhausted := 0
	m := &Meter{Store: st, HoldTTL: time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OnExhausted: func() { exhausted++ }}
	limits := screenshot.PlanLimits{Quota: 2}
	period, _ := screenshot.PeriodOf(time.Now())
	used := func() int {
		n, err := st.Usage(ctx, key.ID, period)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	hold, err := m.Reserve(ctx, key, limits)
	if err != nil || hold == "" {
		t.Fatalf("reserve: %q %v", hold, err)
	}
	m.Settle(ctx, hold, true)
	if used() != 1 {
		t.Fatalf("after a render: used %d", used())
	}
	hold, _ = m.Reserve(ctx, key, limits)
	m.Settle(ctx, hold, false)
	if used() != 1 {
		t.Fatalf("a failed render was counted: used %d", used())
	}
	hold, _ = m.Reserve(ctx, key, limits)
	// While a unit is held, the quota has none left to give.
	if _, err := m.Reserve(ctx, key, limits); screenshot.ErrorCode(err) != screenshot.EFORBIDDEN || exhausted != 1 {
		t.Errorf("over the quota: %v (exhausted %d)", err, exhausted)
	}
	m.Settle(ctx, hold, true)
	m.Wait(time.Second)
	if used() != 2 {
		t.Errorf("used %d, want 2", used())
	}
	// Without a store nothing is metered.
	var none *Meter
	if h, err := none.Reserve(ctx, key, limits); h != "" || err != nil {
		t.Errorf("no store: %q %v", h, err)
	}
	none.Settle(ctx, "", true)
	none.Wait(time.Millisecond)
}
