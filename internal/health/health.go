// Package health runs the component checks behind /health and /health/ready:
// concurrently, each with its own short timeout, so that a hanging component
// makes its own check fail instead of the endpoint hang.
package health

import (
	"context"
	"sync"
	"time"
)

// Statuses of a check. A check reports exactly pass or fail (clients
// validate the value strictly). Impaired is what a check returns for a
// component that works but not fully (some browsers down, little disk
// left): it is reported as pass, with the reason in error, and makes the
// report degraded.
const (
	Pass     = "pass"
	Fail     = "fail"
	Impaired = "impaired"
)

// Statuses of the report.
const (
	Healthy   = "healthy"
	Degraded  = "degraded"
	Unhealthy = "unhealthy"
)

// Result is one check's outcome.
type Result struct {
	Name     string         `json:"name"`
	Status   string         `json:"status"`
	Duration float64        `json:"duration"` // milliseconds
	Details  map[string]any `json:"details,omitempty"`
	Error    string         `json:"error,omitempty"`
	impaired bool
}

// Check is one component check. A returned error makes it fail unless the
// status is Impaired; details are reported either way.
type Check struct {
	Name string
	// Critical checks make the service unhealthy when they fail; the others
	// only degrade it.
	Critical bool
	Run      func(ctx context.Context) (status string, details map[string]any, err error)
}

// Report is the body of /health.
type Report struct {
	Status    string   `json:"status"`
	Timestamp string   `json:"timestamp"`
	Uptime    float64  `json:"uptime"` // seconds
	Checks    []Result `json:"checks"`
	Version   string   `json:"version"`
}

// Checker runs checks.
type Checker struct {
	Checks  []Check
	Timeout time.Duration
	Version string
	Started time.Time
}

// publicDetails are the detail keys that say nothing about the machine, its
// addresses or its secrets.
var publicDetails = map[string]bool{
	"waiting": true, "active": true, "completed": true, "failed": true, "workerRunning": true, "slots": true,
	"ready": true, "backend": true, "configured": true, "fallback": true, "freeBytes": true,
	"engine": true, "version": true, "rules": true,
}

// Public returns the report without what an unauthenticated caller should
// not learn: connection errors, paths, bucket names, process ids, browser
// addresses. Names and statuses stay; a failing check says only that it
// fails, and an impaired one keeps its own short reason.
func (r Report) Public() Report {
	out := r
	out.Checks = make([]Result, len(r.Checks))
	for i, c := range r.Checks {
		p := Result{Name: c.Name, Status: c.Status, Duration: c.Duration}
		for k, v := range c.Details {
			if publicDetails[k] {
				if p.Details == nil {
					p.Details = map[string]any{}
				}
				p.Details[k] = v
			}
		}
		switch {
		case c.Status == Fail:
			p.Error = "check failed; the detail is in the server log and on the metrics port's /health"
		case c.impaired:
			p.Error = c.Error
		}
		out.Checks[i] = p
	}
	return out
}

// Run runs every check concurrently and builds the report.
func (c *Checker) Run(ctx context.Context) Report {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	results := make([]Result, len(c.Checks))
	var wg sync.WaitGroup
	for i, ch := range c.Checks {
		wg.Go(func() {
			results[i] = runOne(ctx, ch, timeout)
		})
	}
	wg.Wait()
	status := Healthy
	for i, r := range results {
		switch {
		case r.Status == Fail && c.Checks[i].Critical:
			status = Unhealthy
		case (r.Status != Pass || r.impaired) && status == Healthy:
			status = Degraded
		}
	}
	now := time.Now()
	return Report{
		Status:    status,
		Timestamp: now.UTC().Format(time.RFC3339Nano),
		Uptime:    now.Sub(c.Started).Seconds(),
		Checks:    results,
		Version:   c.Version,
	}
}

// runOne runs a check with a timeout, without waiting for a check that
// ignores its context.
func runOne(ctx context.Context, ch Check, timeout time.Duration) Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	type out struct {
		status  string
		details map[string]any
		err     error
	}
	done := make(chan out, 1)
	go func() {
		s, d, err := ch.Run(ctx)
		done <- out{s, d, err}
	}()
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		o.err = ctx.Err()
	}
	r := Result{Name: ch.Name, Status: o.status, Details: o.details,
		Duration: float64(time.Since(start).Microseconds()) / 1000}
	if o.err != nil {
		r.Error = o.err.Error()
		if o.status == "" || o.status == Pass {
			r.Status = Fail
		}
	}
	if r.Status == "" || r.Status == Impaired {
		r.impaired = r.Status == Impaired
		r.Status = Pass
	}
	return r
}
