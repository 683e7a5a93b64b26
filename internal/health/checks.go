package health

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// The component checks of the server. Each takes what it looks at as
// functions, so that this package depends on none of the components.

// Database checks the key and usage store: critical.
func Database(backend string, ping func(context.Context) error) Check {
	return Check{Name: "database", Critical: true, Run: func(ctx context.Context) (string, map[string]any, error) {
		return Pass, map[string]any{"backend": backend}, ping(ctx)
	}}
}

// ObjectStorage checks the S3 bucket of the cache, under two names:
// "storage" (where entries go) and "s3" (the specification's own check).
// Unreachable storage degrades: requests render uncached.
func ObjectStorage(name, bucket string, ping func(context.Context) error) Check {
	return Check{Name: name, Run: func(ctx context.Context) (string, map[string]any, error) {
		d := map[string]any{"backend": "s3", "bucket": bucket}
		if name == "s3" {
			d = map[string]any{"configured": true, "bucket": bucket}
		}
		return Pass, d, ping(ctx)
	}}
}

// NoObjectStorage is the "s3" check when no bucket is configured: a fact,
// not a failure.
func NoObjectStorage() Check {
	return Check{Name: "s3", Run: func(context.Context) (string, map[string]any, error) {
		return Pass, map[string]any{"configured": false}, nil
	}}
}

// DataDir is the "storage" check of the embedded default: it writes and
// removes a file in the data directory and reports the free space; under
// 100 MiB free the directory is impaired.
func DataDir(dir string) Check {
	return Check{Name: "storage", Run: func(context.Context) (string, map[string]any, error) {
		d := map[string]any{"path": dir}
		f, err := os.CreateTemp(dir, ".health-*")
		if err != nil {
			return Fail, d, fmt.Errorf("data directory not writable: %w", err)
		}
		name := f.Name()
		_, werr := f.Write([]byte("ok"))
		f.Close()
		os.Remove(name)
		if werr != nil {
			return Fail, d, fmt.Errorf("data directory not writable: %w", werr)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(filepath.Clean(dir), &st); err == nil {
			free := st.Bavail * uint64(st.Bsize) //nolint:gosec // a block size is positive
			d["freeBytes"] = free
			if free < 100<<20 {
				return Impaired, d, fmt.Errorf("only %d MiB free in the data directory", free>>20)
			}
		}
		return Pass, d, nil
	}}
}

// QueueState is what the queue check reports.
type QueueState struct {
	Slots                              int
	Waiting, Active, Completed, Failed int64
	// Running is whether a browser can take jobs.
	Running bool
}

// Queue checks the render queue: impaired while no browser can take jobs.
func Queue(state func() QueueState) Check {
	return Check{Name: "queue", Run: func(context.Context) (string, map[string]any, error) {
		st := state()
		d := map[string]any{"waiting": st.Waiting, "active": st.Active, "completed": st.Completed,
			"failed": st.Failed, "workerRunning": st.Running, "slots": st.Slots}
		if !st.Running {
			return Impaired, d, errors.New("no browser is ready to take jobs")
		}
		return Pass, d, nil
	}}
}

// Browsers checks the browser pool: critical; impaired while some
// browsers are down. stats is reported as it is.
func Browsers(state func() (ready, total int, stats any)) Check {
	return Check{Name: "browser", Critical: true, Run: func(context.Context) (string, map[string]any, error) {
		ready, total, stats := state()
		d := map[string]any{"browsers": stats, "ready": ready}
		switch {
		case ready == 0:
			return Fail, d, errors.New("no browser is ready")
		case ready < total:
			return Impaired, d, fmt.Errorf("%d of %d browsers are down", total-ready, total)
		}
		return Pass, d, nil
	}}
}

// Consent reports the consent engine: off is a fact, not a failure.
func Consent(on bool, version string, rules int) Check {
	return Check{Name: "consent", Run: func(context.Context) (string, map[string]any, error) {
		if !on {
			return Pass, map[string]any{"engine": "off"}, nil
		}
		return Pass, map[string]any{"engine": "autoconsent", "version": version, "rules": rules}, nil
	}}
}

// Redis checks the shared rate limiter: down, rate limits fall back to
// each process (degraded).
func Redis(ping func(context.Context) error) Check {
	return Check{Name: "redis", Run: func(ctx context.Context) (string, map[string]any, error) {
		if err := ping(ctx); err != nil {
			return Fail, map[string]any{"fallback": "in-process rate limiting"}, err
		}
		return Pass, nil, nil
	}}
}
