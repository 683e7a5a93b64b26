package cachefill_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/cachefill"
	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/redisstore"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopShared()
	os.Exit(code)
}

var log = slog.New(slog.DiscardHandler)

// slowRender counts renders and takes a while, so that callers overlap.
func slowRender(n *atomic.Int64) cachefill.Render {
	return func(ctx context.Context) (*screenshot.Image, error) {
		n.Add(1)
		time.Sleep(300 * time.Millisecond)
		return &screenshot.Image{Data: []byte("png"), Format: screenshot.PNG}, nil
	}
}

// TestReplicasShareOneRender: three replicas (three fillers) on one store
// and one Redis lock, ten callers each: one render; the others read it.
func TestReplicasShareOneRender(t *testing.T) {
	rd := testenv.NewRedis(t)
	cache, err := embedded.OpenCache(filepath.Join(t.TempDir(), "cache"), log)
	if err != nil {
		t.Fatal(err)
	}
	var renders atomic.Int64
	var fromStore, fresh atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		lock, err := redisstore.New(redisstore.Config{Addr: rd.Addr()}, embedded.NewLimiter(), log)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		f := &cachefill.Filler{Cache: cache, Lock: lock, LockTTL: 10 * time.Second, Log: log}
		for range 10 {
			wg.Go(func() {
				e, stored, err := f.Fill(t.Context(), "entry-0001", time.Hour, slowRender(&renders))
				if err != nil || string(e.Data) != "png" {
					t.Errorf("fill: %v %v", e, err)
				}
				if stored {
					fromStore.Add(1)
				} else {
					fresh.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if renders.Load() != 1 {
		t.Errorf("%d renders for one entry on three replicas, want 1", renders.Load())
	}
	if fresh.Load() != 10 || fromStore.Load() != 20 {
		t.Errorf("fresh %d, from the store %d; want 10 and 20", fresh.Load(), fromStore.Load())
	}
	if e := (&cachefill.Filler{Cache: cache, Log: log}).Get(t.Context(), "entry-0001"); e == nil || e.ETag == "" {
		t.Errorf("the entry in the store: %+v", e)
	}
}

// TestFailedRenderIsNotStored: a failing render is every caller's error
// and leaves nothing behind; the next fill renders again.
func TestFailedRenderIsNotStored(t *testing.T) {
	cache, err := embedded.OpenCache(filepath.Join(t.TempDir(), "cache"), log)
	if err != nil {
		t.Fatal(err)
	}
	var reads []string
	f := &cachefill.Filler{Cache: cache, Log: log, OnRead: func(r string) { reads = append(reads, r) }}
	boom := errors.New("boom")
	if _, _, err := f.Fill(t.Context(), "entry-0002", time.Hour, func(context.Context) (*screenshot.Image, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("fill error = %v", err)
	}
	if f.Get(t.Context(), "entry-0002") != nil {
		t.Error("a failed render was stored")
	}
	var n atomic.Int64
	if _, stored, err := f.Fill(t.Context(), "entry-0002", time.Hour, slowRender(&n)); err != nil || stored || n.Load() != 1 {
		t.Errorf("second fill: stored %v, %v, %d renders", stored, err, n.Load())
	}
	if len(reads) != 1 || reads[0] != "miss" {
		t.Errorf("reads told: %v", reads)
	}
}
