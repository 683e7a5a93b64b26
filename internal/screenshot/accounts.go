package screenshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// PlanLimits are a plan's figures. Zero Quota means unlimited.
type PlanLimits struct {
	Rate  int // requests per rate window
	Quota int // screenshots per calendar month (UTC)
}

// Plans are the figures of every plan, from the settings.
type Plans struct {
	Free, Pro, Enterprise PlanLimits
}

// DefaultPlans are the specification's figures; enterprise keys without
// figures of their own get RATE_LIMIT_MAX_REQUESTS and no monthly quota.
var DefaultPlans = Plans{Free: PlanLimits{10, 100}, Pro: PlanLimits{60, 1000}, Enterprise: PlanLimits{100, 0}}

// For returns the figures that apply to k: the key's own figures where set,
// else its plan's.
func (p Plans) For(k *Key) PlanLimits {
	l := p.Free
	switch k.Plan {
	case PlanPro:
		l = p.Pro
	case PlanEnterprise:
		l = p.Enterprise
	}
	if k.RateLimit > 0 {
		l.Rate = k.RateLimit
	}
	if k.MonthlyQuota > 0 {
		l.Quota = k.MonthlyQuota
	}
	return l
}

// RateState is a key's rate window after one request was counted.
type RateState struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Time // end of the window
}

// Limiter counts requests per key in fixed windows.
type Limiter interface {
	// Allow counts one request of id in the current window of the given
	// length and says whether it is within limit.
	Allow(ctx context.Context, id string, limit int, window time.Duration) (RateState, error)
}

// WindowOf returns the fixed window that contains t.
func WindowOf(t time.Time, window time.Duration) (start, end time.Time) {
	start = t.Truncate(window)
	return start, start.Add(window)
}

// ErrQuotaExhausted is returned by Reserve when the period's quota is used up.
var ErrQuotaExhausted = errors.New("monthly quota exhausted")

// ErrHoldGone is returned by Commit for a hold that expired or was settled.
var ErrHoldGone = errors.New("quota hold expired or already settled")

// QuotaStore keeps monthly usage. A render first reserves a unit (a hold),
// then commits it on success or releases it on failure, so that concurrent
// requests can never exceed the quota and failures never count. A hold that
// is neither committed nor released (a crashed process) expires by itself.
type QuotaStore interface {
	Reserve(ctx context.Context, keyID, period string, quota int, ttl time.Duration) (hold string, err error)
	Commit(ctx context.Context, hold string) error
	Release(ctx context.Context, hold string) error
	Usage(ctx context.Context, keyID, period string) (int, error)
}

// PeriodOf returns the billing period of t (a UTC calendar month, "2006-01")
// and the moment the next one starts.
func PeriodOf(t time.Time) (period string, resets time.Time) {
	t = t.UTC()
	start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start.Format("2006-01"), start.AddDate(0, 1, 0)
}

// DomainAllowed reports whether host may be captured with a key that allows
// domains: an exact name, or "*.example.org" for any subdomain of
// example.org (not example.org itself). No domains allow every host.
func DomainAllowed(domains []string, host string) bool {
	if len(domains) == 0 {
		return true
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, d := range domains {
		d = strings.TrimSuffix(strings.ToLower(d), ".")
		if suffix, ok := strings.CutPrefix(d, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == d {
			return true
		}
	}
	return false
}

// ValidDomain checks one entry of a key's allowed domains.
func ValidDomain(d string) error {
	name := strings.TrimPrefix(d, "*.")
	if name == "" || strings.ContainsAny(name, "*/:@ ") || strings.HasPrefix(name, ".") || !strings.Contains(name, ".") && name != "localhost" {
		return fmt.Errorf("%q is not a domain such as example.com or *.example.com", d)
	}
	return nil
}

// KeyCache remembers successful key lookups for a short time, so that the
// key store is not asked on every request. Unknown keys are not remembered:
// a new key works at once; a revoked one stops within the TTL.
type KeyCache struct {
	KeyStore
	TTL time.Duration

	mu      sync.Mutex
	entries map[string]keyEntry
}

type keyEntry struct {
	key     *Key
	expires time.Time
}

// KeyByHash answers from memory when it can.
func (c *KeyCache) KeyByHash(ctx context.Context, hash string) (*Key, error) {
	if c.TTL <= 0 {
		return c.KeyStore.KeyByHash(ctx, hash)
	}
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[hash]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.key, nil
	}
	k, err := c.KeyStore.KeyByHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) > 100_000 {
		c.entries = map[string]keyEntry{}
	}
	c.entries[hash] = keyEntry{key: k, expires: now.Add(c.TTL)}
	c.mu.Unlock()
	return k, nil
}
