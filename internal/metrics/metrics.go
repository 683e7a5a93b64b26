// Package metrics holds Shutter's Prometheus collectors on a registry of its
// own, served on a separate port so that a public API does not expose them.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the server's collectors.
type Metrics struct {
	Registry *prometheus.Registry

	Requests        *prometheus.CounterVec   // route, status
	RequestDuration *prometheus.HistogramVec // route
	RenderDuration  *prometheus.HistogramVec // format
	CacheRequests   *prometheus.CounterVec   // result: hit | miss | error
	Blocked         *prometheus.CounterVec   // category
	Refusals        *prometheus.CounterVec   // reason: rate_limit | quota | queue_full
	RenderPhase     *prometheus.HistogramVec // phase: open | setup | navigate | wait | capture
}

// New registers the collectors, the Go runtime and process collectors
// included.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shutter_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"route", "status"}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shutter_http_request_duration_seconds", Help: "HTTP request duration by route.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		RenderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shutter_render_duration_seconds", Help: "Duration of successful renders by format.",
			Buckets: []float64{.05, .1, .2, .3, .5, .75, 1, 2, 5, 10, 30},
		}, []string{"format"}),
		CacheRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shutter_cache_requests_total", Help: "Cache lookups by result (hit, miss, error).",
		}, []string{"result"}),
		Blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shutter_blocked_requests_total", Help: "Requests of rendered pages blocked in the browser, by category.",
		}, []string{"category"}),
		RenderPhase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shutter_render_phase_seconds", Help: "Duration of each phase of a render: open (proxy, browser context, tab), setup, navigate (to the load event), wait, capture.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .2, .5, 1, 2, 5, 10, 30},
		}, []string{"phase"}),
		Refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shutter_refusals_total", Help: "Screenshot requests refused for capacity or limits, by reason.",
		}, []string{"reason"}),
	}
	r.MustRegister(m.Requests, m.RequestDuration, m.RenderDuration, m.CacheRequests, m.Blocked, m.Refusals, m.RenderPhase,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Gauge registers a gauge read from fn at scrape time.
func (m *Metrics) Gauge(name, help string, fn func() float64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// Counter registers a counter read from fn at scrape time.
func (m *Metrics) Counter(name, help string, fn func() float64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
