package health

import (
	"context"
	"errors"
	"testing"
	"time"
)

func check(name string, critical bool, status string, err error, sleep time.Duration) Check {
	return Check{Name: name, Critical: critical, Run: func(ctx context.Context) (string, map[string]any, error) {
		if sleep > 0 {
			time.Sleep(sleep) // ignores ctx on purpose: a hanging component
		}
		return status, map[string]any{"n": 1}, err
	}}
}

func TestStatus(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		checks []Check
		want   string
	}{
		{"all pass", []Check{check("database", true, Pass, nil, 0), check("s3", false, Pass, nil, 0)}, Healthy},
		{"impaired", []Check{check("database", true, Pass, nil, 0), check("storage", false, Impaired, nil, 0)}, Degraded},
		{"non-critical fails", []Check{check("database", true, Pass, nil, 0), check("s3", false, "", boom, 0)}, Degraded},
		{"critical fails", []Check{check("database", true, "", boom, 0), check("s3", false, Pass, nil, 0)}, Unhealthy},
		{"critical impaired", []Check{check("browser", true, Impaired, boom, 0)}, Degraded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Checker{Checks: tc.checks, Version: "v1", Started: time.Now().Add(-time.Minute)}
			r := c.Run(context.Background())
			if r.Status != tc.want {
				t.Errorf("status = %s, want %s (%+v)", r.Status, tc.want, r.Checks)
			}
			if r.Version != "v1" || r.Uptime < 59 || len(r.Checks) != len(tc.checks) || r.Timestamp == "" {
				t.Errorf("report = %+v", r)
			}
			for i, res := range r.Checks {
				if res.Name != tc.checks[i].Name {
					t.Errorf("order: %s at %d", res.Name, i)
				}
				if res.Status != Pass && res.Status != Fail {
					t.Errorf("%s: status %q, want pass or fail", res.Name, res.Status)
				}
				if res.Status == Fail && res.Error == "" {
					t.Errorf("%s failed without an error", res.Name)
				}
			}
		})
	}
}

func TestHangingCheckTimesOut(t *testing.T) {
	c := &Checker{Timeout: 100 * time.Millisecond, Checks: []Check{
		check("database", true, Pass, nil, 0),
		check("s3", false, Pass, nil, 3*time.Second),
		check("storage", false, Pass, nil, 3*time.Second),
	}}
	start := time.Now()
	r := c.Run(context.Background())
	if d := time.Since(start); d > time.Second {
		t.Fatalf("report took %s; checks must run concurrently with their own timeout", d)
	}
	if r.Status != Degraded || r.Checks[1].Status != Fail || r.Checks[2].Status != Fail || r.Checks[0].Status != Pass {
		t.Errorf("report = %+v", r)
	}
	if r.Checks[1].Duration < 90 || r.Checks[1].Duration > 1000 {
		t.Errorf("duration = %v ms", r.Checks[1].Duration)
	}
}
