// Package s3store keeps cached screenshots in S3-compatible object storage
// through minio-go. Each object carries its expiry in user metadata and is
// never served after it; a sweeper deletes expired objects, and a bucket
// lifecycle rule (where the server supports one) removes anything older than
// the longest TTL as a backstop.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/lifecycle"

	"github.com/shutterhq/shutter/internal/screenshot"
)

const prefix = "screenshots/"

// Config configures the store.
type Config struct {
	Endpoint        string // URL such as https://s3.example.com or http://127.0.0.1:9000
	Region          string
	Bucket          string
	AccessKeyID     string
	SecretAccessKey string
	PathStyle       bool
}

// Store is the S3 cache.
type Store struct {
	client *minio.Client
	bucket string
	log    *slog.Logger
}

var _ screenshot.Cache = (*Store)(nil)

// Open connects, creates the bucket when it is missing (where permitted) and
// checks that it can be used, so that wrong credentials or endpoints stop
// start-up with a clear error.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Store, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("STORAGE_URL: %q is not an http(s) URL", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("STORAGE_BUCKET: required with STORAGE_URL")
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	region := cfg.Region
	if region == "auto" {
		region = "" // some providers take "auto"; minio-go then asks the server
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:       u.Scheme == "https",
		Region:       region,
		BucketLookup: lookup,
		// A cache must fail fast: a request whose store is down renders
		// uncached rather than wait through retries.
		MaxRetries: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	s := &Store{client: client, bucket: cfg.Bucket, log: log}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	exists, err := client.BucketExists(cctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("storage: cannot reach bucket %q at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !exists {
		if err := client.MakeBucket(cctx, cfg.Bucket, minio.MakeBucketOptions{Region: region}); err != nil {
			return nil, fmt.Errorf("storage: bucket %q does not exist and cannot be created: %w", cfg.Bucket, err)
		}
		log.InfoContext(ctx, "created bucket", "bucket", cfg.Bucket)
	}
	if err := s.Ping(cctx); err != nil {
		return nil, fmt.Errorf("storage: bucket %q is not usable: %w", cfg.Bucket, err)
	}
	s.setLifecycle(cctx)
	return s, nil
}

// setLifecycle asks the bucket to drop screenshots older than the longest
// TTL. Not every S3 implementation supports it; the sweeper covers the rest.
func (s *Store) setLifecycle(ctx context.Context) {
	cfg := lifecycle.NewConfiguration()
	cfg.Rules = []lifecycle.Rule{{
		ID:         "shutter-screenshot-expiry",
		Status:     "Enabled",
		RuleFilter: lifecycle.Filter{Prefix: prefix},
		Expiration: lifecycle.Expiration{Days: lifecycle.ExpirationDays(screenshot.MaxCacheTTL/86400 + 1)},
	}}
	if err := s.client.SetBucketLifecycle(ctx, s.bucket, cfg); err != nil {
		s.log.InfoContext(ctx, "bucket lifecycle rule not set; the sweeper removes expired screenshots", "err", err)
	}
}

// Ping lists at most one object: it needs the endpoint, the credentials and
// the bucket to be right.
func (s *Store) Ping(ctx context.Context) error {
	// The first answer is enough: an error, an object, or none.
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, MaxKeys: 1}) {
		return obj.Err
	}
	return nil
}

// Get fetches an entry; missing or expired is ENOTFOUND.
func (s *Store) Get(ctx context.Context, id string) (*screenshot.CacheEntry, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, prefix+id, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("storage get: %w", err)
	}
	defer obj.Close()
	info, err := obj.Stat()
	if err != nil {
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, screenshot.Errorf(screenshot.ENOTFOUND, "not cached")
		}
		return nil, fmt.Errorf("storage get: %w", err)
	}
	exp, ok := expiry(info.UserMetadata)
	if !ok || !time.Now().Before(exp) {
		return nil, screenshot.Errorf(screenshot.ENOTFOUND, "expired")
	}
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, fmt.Errorf("storage get: %w", err)
	}
	etag := meta(info.UserMetadata, "Etag")
	if screenshot.ETagOf(data) != etag {
		return nil, screenshot.Errorf(screenshot.ENOTFOUND, "damaged cache entry")
	}
	return &screenshot.CacheEntry{Data: data, Format: screenshot.Format(meta(info.UserMetadata, "Format")), ETag: etag, Expires: exp,
		Truncated: meta(info.UserMetadata, "Truncated") == "true"}, nil
}

// Put stores an entry. S3 makes an object visible only once it is complete.
func (s *Store) Put(ctx context.Context, id string, e *screenshot.CacheEntry) error {
	_, err := s.client.PutObject(ctx, s.bucket, prefix+id, bytes.NewReader(e.Data), int64(len(e.Data)), minio.PutObjectOptions{
		ContentType: e.Format.ContentType(),
		UserMetadata: map[string]string{
			"Expires-At": strconv.FormatInt(e.Expires.UnixMilli(), 10),
			"Format":     string(e.Format),
			"Etag":       e.ETag,
			"Truncated":  strconv.FormatBool(e.Truncated),
		},
	})
	if err != nil {
		return fmt.Errorf("storage put: %w", err)
	}
	return nil
}

// Sweep deletes expired screenshots, looking at no more than limit objects.
func (s *Store) Sweep(ctx context.Context, limit int) (removed int, err error) {
	seen := 0
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return removed, obj.Err
		}
		if seen++; seen > limit {
			break
		}
		info, err := s.client.StatObject(ctx, s.bucket, obj.Key, minio.StatObjectOptions{})
		if err != nil {
			continue
		}
		if exp, ok := expiry(info.UserMetadata); !ok || !time.Now().Before(exp) {
			if s.client.RemoveObject(ctx, s.bucket, obj.Key, minio.RemoveObjectOptions{}) == nil {
				removed++
			}
		}
	}
	return removed, nil
}

// RunSweeper sweeps every interval until ctx ends.
func (s *Store) RunSweeper(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.Sweep(ctx, 10000); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "storage sweep", "err", err)
			} else if n > 0 {
				s.log.DebugContext(ctx, "storage sweep", "removed", n)
			}
		}
	}
}

// meta reads user metadata whatever the case the server returned.
func meta(m map[string]string, name string) string {
	for k, v := range m {
		if strings.EqualFold(k, name) || strings.EqualFold(k, "X-Amz-Meta-"+name) {
			return v
		}
	}
	return ""
}

func expiry(m map[string]string) (time.Time, bool) {
	ms, err := strconv.ParseInt(meta(m, "Expires-At"), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}
