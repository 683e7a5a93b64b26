package chromium

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/testenv"
)

// TestSpareOpensEarlyOnlyBackToBack: a spare found ready long after the
// last render ended means requests come with gaps (the next spare is
// opened after the render); one still being opened, or ready only because
// it was opened early, means they come back to back.
func TestSpareOpensEarlyOnlyBackToBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ready   bool
		making  bool
		since   time.Duration // since the last render ended
		opening time.Duration
		was     bool
		want    bool
	}{
		{name: "ready after a gap", ready: true, since: time.Second, opening: 150 * time.Millisecond, was: true, want: false},
		{name: "ready, but a late one would not have been", ready: true, since: 20 * time.Millisecond, opening: 150 * time.Millisecond, want: true},
		{name: "still being opened", making: true, since: 5 * time.Second, opening: 150 * time.Millisecond, want: true},
		{name: "none: unchanged", since: 5 * time.Second, was: true, want: true},
		{name: "none: unchanged, late", since: 5 * time.Millisecond, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &spares{early: tc.was, lastEnd: time.Now().Add(-tc.since), opening: tc.opening}
			if tc.ready {
				s.ready = &spare{}
			}
			if tc.making {
				made := make(chan struct{})
				close(made)
				s.making = made
			}
			s.take(context.Background())
			if got := s.opensEarly(); got != tc.want {
				t.Fatalf("early = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSpareAfterAGappedRender: with gaps between requests, a render's
// successor's tab is not opened while the render runs (it would take the
// cores from its capture) but after it ends; back to back, it is opened
// while the render waits.
func TestSpareAfterAGappedRender(t *testing.T) {
	site := testenv.HTMLServer(t, `<body style="background:#00ff00">slow</body>`)
	p, err := startPool(Config{ExecPath: testenv.Chrome(t), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := p.list()[0].current()
	c.spares.settled()
	if c.spares.spareContext() == "" {
		t.Fatal("no spare once the browser was ready")
	}
	o := opts(t, site.URL, "format", "png", "width", "320", "height", "240", "delay", "1")
	opened := func() bool { // a spare is ready or being opened
		c.spares.mu.Lock()
		defer c.spares.mu.Unlock()
		return c.spares.ready != nil || c.spares.making != nil
	}
	openDuringRender := func() bool {
		t.Helper()
		seen := make(chan bool, 1)
		go func() {
			time.Sleep(500 * time.Millisecond) // within the 1-s delay, after navigation
			seen <- opened()
		}()
		if _, err := p.Render(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		return <-seen
	}
	// A browser opens a spare when it is ready; after a gap, a render takes
	// the ready spare and the one after it is opened late.
	if _, err := p.Render(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	settled(p)
	time.Sleep(200 * time.Millisecond)
	if openDuringRender() {
		t.Fatal("after a gap, the next spare was opened while the render ran")
	}
	if !opened() {
		t.Fatal("no spare opened when the render ended")
	}
	// Back to back: the render that follows at once finds its spare still
	// being opened, and so opens its own successor's during its wait.
	if !openDuringRender() {
		t.Fatal("back to back, the next spare was not opened while the render ran")
	}
}

// TestTogether: independent set-up actions all run, at once, and the error
// is the first in the list's order whatever order they finish in.
func TestTogether(t *testing.T) {
	first, second := errors.New("first"), errors.New("second")
	var ran atomic.Int32
	started := make(chan struct{})
	act := func(d time.Duration, err error) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
			if ran.Add(1) == 3 {
				close(started)
			}
			select { // none finishes before all have started: they run at once
			case <-started:
			case <-time.After(5 * time.Second):
				return chromedp.Void{}, errors.New("the actions ran one after another")
			}
			time.Sleep(d)
			return chromedp.Void{}, err
		}
	}
	_, err := together(act(0, nil), act(50*time.Millisecond, first), act(0, second))(context.Background(), nil)
	if err != first || ran.Load() != 3 {
		t.Fatalf("err = %v after %d actions, want the first in order after 3", err, ran.Load())
	}
}
