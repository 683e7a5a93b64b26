package s3store

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/storetest"
	"github.com/shutterhq/shutter/internal/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func open(t testing.TB, s3 *testenv.S3, bucket string) *Store {
	t.Helper()
	st, err := Open(context.Background(), Config{Endpoint: s3.URL(), Region: "us-east-1", Bucket: bucket,
		AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey, PathStyle: true}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestCache(t *testing.T) {
	s3 := testenv.NewS3(t)
	storetest.RunCache(t, open(t, s3, "shutter-cache"))
}

func TestBucketCreatedAndBadSettings(t *testing.T) {
	s3 := testenv.NewS3(t)
	open(t, s3, "created-at-start")
	open(t, s3, "created-at-start") // exists now: fine
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Endpoint: s3.URL(), Bucket: "b", AccessKeyID: s3.AccessKey, SecretAccessKey: "wrong", PathStyle: true}, "storage:"},
		{Config{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "b", PathStyle: true}, "cannot reach bucket"},
		{Config{Endpoint: "s3.example.com", Bucket: "b"}, "STORAGE_URL"},
		{Config{Endpoint: s3.URL()}, "STORAGE_BUCKET"},
	} {
		_, err := Open(context.Background(), tc.cfg, quiet)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestSweepAndOutage(t *testing.T) {
	s3 := testenv.NewS3(t)
	st := open(t, s3, "sweep")
	ctx := context.Background()
	data := []byte("img")
	st.Put(ctx, "expired0123456789", &screenshot.CacheEntry{Data: data, Format: screenshot.PNG, ETag: screenshot.ETagOf(data), Expires: time.Now().Add(-time.Second)})
	st.Put(ctx, "live0123456789ab", &screenshot.CacheEntry{Data: data, Format: screenshot.PNG, ETag: screenshot.ETagOf(data), Expires: time.Now().Add(time.Hour)})
	if n, err := st.Sweep(ctx, 100); err != nil || n != 1 {
		t.Errorf("sweep: %d %v", n, err)
	}
	if _, err := st.Get(ctx, "live0123456789ab"); err != nil {
		t.Errorf("live entry after sweep: %v", err)
	}
	s3.Stop()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := st.Get(cctx, "live0123456789ab"); err == nil || screenshot.ErrorCode(err) == screenshot.ENOTFOUND {
		t.Errorf("get with the server down: %v, want a store error (not a miss)", err)
	}
	if err := st.Ping(cctx); err == nil {
		t.Error("ping with the server down succeeded")
	}
	if err := s3.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "live0123456789ab"); err != nil {
		t.Errorf("after restart: %v", err)
	}
}

func BenchmarkS3CacheHit(b *testing.B) {
	s3 := testenv.NewS3(b)
	st := open(b, s3, "bench")
	data := make([]byte, 120<<10)
	st.Put(context.Background(), "bench0123456789a", &screenshot.CacheEntry{Data: data, Format: screenshot.JPEG, ETag: screenshot.ETagOf(data), Expires: time.Now().Add(time.Hour)})
	for b.Loop() {
		if _, err := st.Get(context.Background(), "bench0123456789a"); err != nil {
			b.Fatal(err)
		}
	}
}
