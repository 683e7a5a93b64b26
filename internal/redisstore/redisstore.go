// Package redisstore is the production rate limiter on Redis: one Lua script
// per check, so that every server sharing the Redis counts exactly. When
// Redis cannot be reached it falls back to an in-process limiter (logged and
// reported by Healthy) and goes back to Redis as soon as it answers again.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// count increments the window's counter, sets its expiry on first use, and
// returns the new count. KEYS[1] window key; ARGV[1] window length in ms.
var count = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`)

// Config configures the limiter.
type Config struct {
	URL      string // redis:// or rediss://; wins over the parts
	Addr     string // host:port
	Password string
	Prefix   string // key prefix, default "shutter:"
}

// Limiter is the Redis rate limiter.
type Limiter struct {
	client   *redis.Client
	prefix   string
	fallback screenshot.Limiter
	log      *slog.Logger

	downUntil atomic.Int64 // unix nanos: skip Redis until then after a failure
	lastErr   atomic.Pointer[string]
}

var _ screenshot.Limiter = (*Limiter)(nil)

// New connects lazily; use Ping to check. fallback serves while Redis is down.
func New(cfg Config, fallback screenshot.Limiter, log *slog.Logger) (*Limiter, error) {
	var opts *redis.Options
	if cfg.URL != "" {
		o, err := redis.ParseURL(cfg.URL)
		if err != nil {
			return nil, errors.New("REDIS_URL: not a valid redis:// URL")
		}
		opts = o
	} else {
		opts = &redis.Options{Addr: cfg.Addr, Password: cfg.Password}
	}
	opts.DialTimeout = 500 * time.Millisecond
	opts.ReadTimeout = 500 * time.Millisecond
	opts.WriteTimeout = 500 * time.Millisecond
	opts.MaxRetries = 0
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "shutter:"
	}
	return &Limiter{client: redis.NewClient(opts), prefix: prefix, fallback: fallback, log: log}, nil
}

// Close closes the client.
func (l *Limiter) Close() error { return l.client.Close() }

// Ping checks that Redis answers.
func (l *Limiter) Ping(ctx context.Context) error { return l.client.Ping(ctx).Err() }

// Degraded returns the last Redis error while the fallback is in use.
func (l *Limiter) Degraded() error {
	if time.Now().UnixNano() < l.downUntil.Load() {
		if e := l.lastErr.Load(); e != nil {
			return errors.New(*e)
		}
		return errors.New("redis unavailable")
	}
	return nil
}

// Allow counts one request of id in Redis, or in the fallback while Redis
// is down.
func (l *Limiter) Allow(ctx context.Context, id string, limit int, window time.Duration) (screenshot.RateState, error) {
	if time.Now().UnixNano() >= l.downUntil.Load() {
		st, err := l.allow(ctx, id, limit, window)
		if err == nil {
			return st, nil
		}
		if ctx.Err() != nil {
			return st, err
		}
		msg := err.Error()
		l.lastErr.Store(&msg)
		l.downUntil.Store(time.Now().Add(time.Second).UnixNano())
		l.log.WarnContext(ctx, "redis unavailable; rate limiting in process", "err", err)
	}
	if l.fallback == nil {
		return screenshot.RateState{}, &screenshot.Error{Code: screenshot.EUNAVAILABLE,
			Message: "the rate limiter is unavailable; try again shortly", RetryAfter: time.Second}
	}
	return l.fallback.Allow(ctx, id, limit, window)
}

func (l *Limiter) allow(ctx context.Context, id string, limit int, window time.Duration) (screenshot.RateState, error) {
	start, end := screenshot.WindowOf(time.Now(), window)
	key := fmt.Sprintf("%srl:%s:%d", l.prefix, id, start.UnixMilli())
	n, err := count.Run(ctx, l.client, []string{key}, window.Milliseconds()+1000).Int()
	if err != nil {
		return screenshot.RateState{}, fmt.Errorf("redis rate limit: %w", err)
	}
	return screenshot.RateState{Allowed: n <= limit, Limit: limit, Remaining: max(0, limit-n), Reset: end}, nil
}

var unlock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

var _ screenshot.Locker = (*Limiter)(nil)

// Lock takes a short lock that only its holder can release; it expires by
// itself after ttl so a crashed holder cannot keep it.
func (l *Limiter) Lock(ctx context.Context, name string, ttl time.Duration) (func(), bool, error) {
	token := screenshot.NewToken()
	key := l.prefix + "lock:" + name
	ok, err := l.client.SetNX(ctx, key, token, ttl).Result()
	if err != nil || !ok {
		return nil, false, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		unlock.Run(ctx, l.client, []string{key}, token)
	}, true, nil
}
