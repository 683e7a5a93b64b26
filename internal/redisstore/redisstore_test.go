package redisstore

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/storetest"
	"github.com/shutterhq/shutter/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopShared()
	os.Exit(code)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newLimiter(t *testing.T, addr, prefix string, fallback screenshot.Limiter) *Limiter {
	t.Helper()
	l, err := New(Config{Addr: addr, Prefix: prefix}, fallback, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Three clients stand for three server processes sharing one Redis.
func TestLimiter(t *testing.T) {
	addr, prefix := testenv.RedisAddr(t)
	storetest.RunLimiter(t, newLimiter(t, addr, prefix, nil), newLimiter(t, addr, prefix, nil), newLimiter(t, addr, prefix, nil))
}

func TestURL(t *testing.T) {
	addr, prefix := testenv.RedisAddr(t)
	l, err := New(Config{URL: "redis://" + addr + "/0", Prefix: prefix}, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{URL: "http://x"}, nil, quiet); err == nil {
		t.Error("accepted a non-redis URL")
	}
}

// TestFallbackAndRecovery stops Redis: checks go on in process, quickly,
// and return to Redis once it answers again.
func TestFallbackAndRecovery(t *testing.T) {
	rd := testenv.NewRedis(t)
	l := newLimiter(t, rd.Addr(), "f:", embedded.NewLimiter())
	ctx := context.Background()
	if st, err := l.Allow(ctx, "k", 5, time.Minute); err != nil || !st.Allowed || l.Degraded() != nil {
		t.Fatalf("before: %+v %v", st, err)
	}
	rd.Stop()
	start := time.Now()
	for range 3 {
		st, err := l.Allow(ctx, "k", 5, time.Minute)
		if err != nil || !st.Allowed {
			t.Fatalf("during the outage: %+v %v", st, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("checks during the outage took %s", d)
	}
	if l.Degraded() == nil {
		t.Error("not reported as degraded during the outage")
	}
	if err := rd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := l.Allow(ctx, "k", 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if l.Degraded() != nil {
		t.Errorf("still degraded after Redis came back: %v", l.Degraded())
	}
	// Without a fallback, an outage is a 503 for the client.
	strict := newLimiter(t, rd.Addr(), "s:", nil)
	rd.Stop()
	if _, err := strict.Allow(ctx, "k", 5, time.Minute); screenshot.ErrorCode(err) != screenshot.EUNAVAILABLE {
		t.Errorf("no fallback: %v, want EUNAVAILABLE", err)
	}
}
