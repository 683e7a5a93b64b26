// Package storetest is the one test suite that every backend of the key
// store, the quota store and the rate limiter passes.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Store is a key and usage store under test.
type Store interface {
	screenshot.KeyStore
	screenshot.QuotaStore
}

// NewKey creates a key in s and returns it.
func NewKey(tb testing.TB, s screenshot.KeyStore, plan screenshot.Plan, quota int) *screenshot.Key {
	tb.Helper()
	secret := screenshot.NewSecret("ss", "development")
	k := &screenshot.Key{ID: screenshot.NewKeyID(), Name: "test", Prefix: screenshot.DisplayPrefix(secret),
		Hash: screenshot.HashSecret(secret), Plan: plan, MonthlyQuota: quota, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	if err := s.CreateKey(context.Background(), k); err != nil {
		tb.Fatal(err)
	}
	return k
}

// RunKeys tests the key store.
func RunKeys(t *testing.T, s screenshot.KeyStore) {
	ctx := context.Background()
	k := &screenshot.Key{ID: screenshot.NewKeyID(), Name: "site", Prefix: "ss_test_abcd…", Hash: screenshot.HashSecret(fmt.Sprint(time.Now().UnixNano())),
		Plan: screenshot.PlanPro, Domains: []string{"example.com", "*.example.org"}, RateLimit: 5, MonthlyQuota: 7,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateKey(ctx, k); err == nil {
		t.Error("a second key with the same id was accepted")
	}
	got, err := s.KeyByHash(ctx, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != k.ID || got.Name != "site" || got.Plan != screenshot.PlanPro || fmt.Sprint(got.Domains) != fmt.Sprint(k.Domains) ||
		got.RateLimit != 5 || got.MonthlyQuota != 7 || !got.CreatedAt.Equal(k.CreatedAt) || got.Revoked() {
		t.Errorf("KeyByHash = %+v, want %+v", got, k)
	}
	if _, err := s.KeyByHash(ctx, "no-such-hash"); screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
		t.Errorf("unknown hash: %v, want ENOTFOUND", err)
	}

	plan, domains, rate := screenshot.PlanEnterprise, []string{"a.example"}, 0
	if err := s.UpdateKey(ctx, k.ID, screenshot.KeyUpdate{Plan: &plan, Domains: &domains, RateLimit: &rate}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.KeyByHash(ctx, k.Hash)
	if got.Plan != plan || fmt.Sprint(got.Domains) != "[a.example]" || got.RateLimit != 0 || got.MonthlyQuota != 7 || got.Name != "site" {
		t.Errorf("after update: %+v", got)
	}
	none := []string{}
	if err := s.UpdateKey(ctx, k.ID, screenshot.KeyUpdate{Domains: &none}); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.KeyByHash(ctx, k.Hash); len(got.Domains) != 0 {
		t.Errorf("domains after clearing: %q", got.Domains)
	}
	if err := s.UpdateKey(ctx, "key_missing", screenshot.KeyUpdate{Plan: &plan}); screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
		t.Errorf("update missing: %v", err)
	}

	if err := s.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = s.KeyByHash(ctx, k.Hash)
	first := got.RevokedAt
	if !got.Revoked() {
		t.Error("revoked key is not revoked")
	}
	if err := s.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.KeyByHash(ctx, k.Hash); !got.RevokedAt.Equal(first) {
		t.Error("revoking twice moved the revocation time")
	}
	if err := s.RevokeKey(ctx, "key_missing"); screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
		t.Errorf("revoke missing: %v", err)
	}
	list, err := s.ListKeys(ctx)
	if err != nil || len(list) == 0 || list[len(list)-1].ID != k.ID {
		t.Errorf("ListKeys = %v, %v", list, err)
	}
}

// RunQuota tests the quota store. stores are several handles on the same
// data (as several server processes have); each must see the others' holds.
func RunQuota(t *testing.T, stores ...Store) {
	ctx := context.Background()
	s := stores[0]
	t.Run("reserve commit release", func(t *testing.T) {
		k := NewKey(t, s, screenshot.PlanFree, 0)
		const period = "2026-11"
		h1, err := s.Reserve(ctx, k.ID, period, 2, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := s.Reserve(ctx, k.ID, period, 2, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Reserve(ctx, k.ID, period, 2, time.Minute); !errors.Is(err, screenshot.ErrQuotaExhausted) {
			t.Fatalf("third reserve: %v, want exhausted", err)
		}
		if err := s.Release(ctx, h2); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, h1); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, h1); !errors.Is(err, screenshot.ErrHoldGone) {
			t.Errorf("a hold committed twice: %v, want ErrHoldGone", err)
		}
		if n, _ := s.Usage(ctx, k.ID, period); n != 1 {
			t.Errorf("usage = %d, want 1", n)
		}
		h3, err := s.Reserve(ctx, k.ID, period, 2, time.Minute)
		if err != nil {
			t.Fatalf("reserve after release: %v", err)
		}
		s.Commit(ctx, h3)
		if _, err := s.Reserve(ctx, k.ID, period, 2, time.Minute); !errors.Is(err, screenshot.ErrQuotaExhausted) {
			t.Errorf("reserve beyond quota: %v", err)
		}
		// Another period is another budget; quota 0 is unlimited.
		if _, err := s.Reserve(ctx, k.ID, "2026-12", 2, time.Minute); err != nil {
			t.Errorf("next period: %v", err)
		}
		for range 5 {
			h, err := s.Reserve(ctx, k.ID, period, 0, time.Minute)
			if err != nil {
				t.Fatalf("unlimited: %v", err)
			}
			s.Commit(ctx, h)
		}
		if n, _ := s.Usage(ctx, k.ID, period); n != 7 {
			t.Errorf("usage = %d, want 7", n)
		}
	})
	t.Run("expired holds return", func(t *testing.T) {
		k := NewKey(t, s, screenshot.PlanFree, 0)
		if _, err := s.Reserve(ctx, k.ID, "2026-11", 1, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Reserve(ctx, k.ID, "2026-11", 1, time.Minute); !errors.Is(err, screenshot.ErrQuotaExhausted) {
			t.Fatalf("held unit was given out twice: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := s.Reserve(ctx, k.ID, "2026-11", 1, time.Minute); err != nil {
			t.Fatalf("an expired hold (a crashed server) kept its unit: %v", err)
		}
	})
	t.Run("exact under concurrency", func(t *testing.T) {
		k := NewKey(t, s, screenshot.PlanFree, 0)
		const requests, quota = 200, 50
		var granted, refused atomic.Int64
		var wg sync.WaitGroup
		for i := range requests {
			st := stores[i%len(stores)]
			wg.Go(func() {
				h, err := st.Reserve(ctx, k.ID, "2026-11", quota, time.Minute)
				switch {
				case errors.Is(err, screenshot.ErrQuotaExhausted):
					refused.Add(1)
				case err != nil:
					t.Error(err)
				default:
					granted.Add(1)
					if err := st.Commit(ctx, h); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if granted.Load() != quota || refused.Load() != requests-quota {
			t.Errorf("granted %d, refused %d; want %d and %d", granted.Load(), refused.Load(), quota, requests-quota)
		}
		if n, _ := s.Usage(ctx, k.ID, "2026-11"); n != quota {
			t.Errorf("usage = %d, want %d", n, quota)
		}
	})
}

// RunLimiter tests a rate limiter. limiters are handles on the same counters.
func RunLimiter(t *testing.T, limiters ...screenshot.Limiter) {
	ctx := context.Background()
	l := limiters[0]
	id := fmt.Sprintf("key_%d", time.Now().UnixNano())
	t.Run("window", func(t *testing.T) {
		window := 400 * time.Millisecond
		// Start at the beginning of a window so that it does not roll over
		// during the test.
		_, end := screenshot.WindowOf(time.Now(), window)
		time.Sleep(time.Until(end) + 5*time.Millisecond)
		for i := 1; i <= 4; i++ {
			st, err := l.Allow(ctx, id, 3, window)
			if err != nil {
				t.Fatal(err)
			}
			if st.Allowed != (i <= 3) || st.Limit != 3 || st.Remaining != max(0, 3-i) || st.Reset.Before(time.Now()) || st.Reset.After(time.Now().Add(window)) {
				t.Errorf("request %d: %+v", i, st)
			}
		}
		_, end = screenshot.WindowOf(time.Now(), window)
		time.Sleep(time.Until(end) + 5*time.Millisecond)
		if st, _ := l.Allow(ctx, id, 3, window); !st.Allowed || st.Remaining != 2 {
			t.Errorf("next window: %+v", st)
		}
		// Keys are counted apart.
		if st, _ := l.Allow(ctx, id+"-other", 3, window); !st.Allowed || st.Remaining != 2 {
			t.Errorf("another key: %+v", st)
		}
	})
	t.Run("exact under concurrency", func(t *testing.T) {
		window := time.Minute
		_, end := screenshot.WindowOf(time.Now(), window)
		if time.Until(end) < 5*time.Second {
			time.Sleep(time.Until(end) + 10*time.Millisecond)
		}
		key := id + "-conc"
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for i := range 200 {
			lim := limiters[i%len(limiters)]
			wg.Go(func() {
				st, err := lim.Allow(ctx, key, 50, window)
				if err != nil {
					t.Error(err)
				}
				if st.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if allowed.Load() != 50 {
			t.Errorf("allowed %d of 200 with a limit of 50", allowed.Load())
		}
	})
}
