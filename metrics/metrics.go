// Package metrics turns what a [switchboard.Manager] observes into
// Prometheus metrics, with client_golang: the families the README lists, each
// prefixed switchboard_, plus the Go runtime's and the process's.
//
// A host makes one [Metrics] per manager: it gives [Metrics.Observer] to
// [switchboard.New], calls [Metrics.Follow] once the manager exists, and
// serves [Metrics.Handler] (the gateway does, at /metrics, given it in
// its Options.Metrics, and shows [Metrics.Latency] on its status page).
//
// The metrics are fed by the manager's [switchboard.Observer] and its
// events as things happen, and by its status at a scrape, never by polling
// the servers. Their labels are
// server names, tool names (the public ones), states, list kinds and
// outcomes only: never arguments, URLs or error texts, so that the series
// stay few and no secret reaches a scrape.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
)

// Metrics holds the metrics of one manager, in a registry of their own.
// Its methods are safe for concurrent use.
type Metrics struct {
	reg             *prometheus.Registry
	state           *prometheus.GaugeVec
	calls           *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	reconnects      *prometheus.CounterVec
	connectFailures *prometheus.CounterVec
	refreshes       *prometheus.CounterVec
	exposed         *prometheus.GaugeVec
	inFlight        *prometheus.GaugeVec
	fromStatus      *fromStatus
	reloads         *prometheus.CounterVec
	reloadOK        prometheus.Gauge
	sessionsDropped *prometheus.CounterVec
	rateLimited     *prometheus.CounterVec
	localFallback   prometheus.Counter

	vecs []*prometheus.MetricVec

	// mu guards the following. Observers hold it to read, so that no
	// observation of a removed server recreates a series that follow
	// dropped.
	mu      sync.RWMutex
	known   map[string]bool // the servers with series
	removed map[string]bool // the servers whose series were dropped
}

// New returns the metrics, registered with the Go runtime's and the
// process's collectors.
func New() *Metrics {
	x := &Metrics{
		reg: prometheus.NewRegistry(),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchboard_upstream_state", Help: "1 for the server's current state, 0 for the others.",
		}, []string{"server", "state"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_tool_calls_total", Help: "Tool calls routed to a server, by outcome.",
		}, []string{"server", "tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_tool_call_duration_seconds", Help: "How long tool calls took, from routing to answer.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 17), // 1 ms to about 65 s
		}, []string{"server"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_upstream_reconnects_total", Help: "Times a server was connected again after its first connection.",
		}, []string{"server"}),
		connectFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_upstream_connect_failures_total", Help: "Failed connection attempts.",
		}, []string{"server"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_list_refreshes_total", Help: "Fetches of a server's tools, prompts or resources, by outcome.",
		}, []string{"server", "kind", "outcome"}),
		exposed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchboard_tools_exposed", Help: "Tools the gateway exposes, by server.",
		}, []string{"server"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchboard_calls_in_flight", Help: "Tool calls in flight, by server.",
		}, []string{"server"}),
		fromStatus: newFromStatus(),
	}
	x.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_config_reloads_total", Help: "Reloads of the config, by outcome: ok, rejected_entries (applied but for some entries), refused (the config did not load; the running one stays) or error.",
	}, []string{"outcome"})
	x.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "switchboard_config_last_reload_successful", Help: "1 if the last reload of the config applied all of it (or there was none), else 0.",
	})
	x.reloadOK.Set(1)
	x.sessionsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_gateway_sessions_dropped_total", Help: "Client sessions the gateway closed or refused, by reason: notify_queue_full (the client did not read its notifications) or max_sessions (a new session beyond the limit).",
	}, []string{"reason"})
	x.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_rate_limited_total", Help: "Requests the gateway's rate limits refused, by limit (identity or server) and the request's server.",
	}, []string{"limit", "server"})
	x.localFallback = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_rate_limit_local_fallback_total", Help: "Requests the rate limits decided by this replica's own buckets because their Redis did not answer or had no free connection.",
	})
	x.reg.MustRegister(x.reloads, x.reloadOK, x.sessionsDropped, x.rateLimited, x.localFallback)
	x.reg.MustRegister(x.state, x.calls, x.duration, x.reconnects, x.connectFailures, x.refreshes, x.exposed, x.inFlight, x.fromStatus,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	x.vecs = []*prometheus.MetricVec{x.state.MetricVec, x.calls.MetricVec, x.duration.MetricVec, x.reconnects.MetricVec,
		x.connectFailures.MetricVec, x.refreshes.MetricVec, x.exposed.MetricVec, x.inFlight.MetricVec, x.rateLimited.MetricVec}
	x.known, x.removed = make(map[string]bool), make(map[string]bool)
	return x
}

// observe runs update unless server was removed: a call that ends after
// its server left the config is not counted.
func (x *Metrics) observe(server string, update func()) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.removed[server] {
		update()
	}
}

// states are the states a server is shown in, each a series.
var states = []switchboard.State{
	switchboard.StateDisconnected, switchboard.StateConnecting, switchboard.StateConnected, switchboard.StateReconnecting,
	switchboard.StateFailed, switchboard.StateCrashLoop, switchboard.StateDisabled, switchboard.StateClosed, switchboard.StateNeedsAuth,
}

// setState makes state the one of server's series that is 1.
func (x *Metrics) setState(server string, state switchboard.State) {
	for _, s := range states {
		v := 0.0
		if s == state {
			v = 1
		}
		x.state.WithLabelValues(server, s.String()).Set(v)
	}
}

// follow gives a server of statuses new to the metrics its series, and
// drops every series of one that is gone.
func (x *Metrics) follow(statuses []switchboard.ServerStatus) {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := make(map[string]bool)
	for _, s := range statuses {
		now[s.Name] = true
		if !x.known[s.Name] {
			delete(x.removed, s.Name)
			x.setState(s.Name, s.State)
			// Every server has these series from the start, at 0.
			x.inFlight.WithLabelValues(s.Name)
			x.duration.WithLabelValues(s.Name)
		}
	}
	for name := range x.known {
		if !now[name] {
			x.removed[name] = true
			for _, v := range x.vecs {
				v.DeletePartialMatch(prometheus.Labels{"server": name})
			}
		}
	}
	x.known = now
}

// countTools sets tools_exposed of every server of statuses from the
// exposed tools.
func (x *Metrics) countTools(statuses []switchboard.ServerStatus, tools []switchboard.Tool) {
	counts := make(map[string]int)
	for _, s := range statuses {
		counts[s.Name] = 0
	}
	for _, t := range tools {
		counts[t.Server]++
	}
	for server, n := range counts {
		x.exposed.WithLabelValues(server).Set(float64(n))
	}
}

// ConfigReloaded counts a reload of the config by its outcome: "ok",
// "rejected_entries", "refused" or "error".
func (x *Metrics) ConfigReloaded(outcome string) {
	x.reloads.WithLabelValues(outcome).Inc()
	if outcome == "ok" {
		x.reloadOK.Set(1)
	} else {
		x.reloadOK.Set(0)
	}
}

// RateLimited counts a request the gateway's rate limits refused, by the
// kind of limit ("identity" or "server") and the request's server: see
// gateway.RateLimiterOptions.Limited. Never the identity: its subjects are
// unbounded, and personal.
func (x *Metrics) RateLimited(limit, server string) {
	x.rateLimited.WithLabelValues(limit, server).Inc()
}

// RateLimitLocalFallback counts a request the rate limits decided by this
// replica's own buckets because their Redis did not answer: see
// gateway.RateLimiterOptions.LocalFallback.
func (x *Metrics) RateLimitLocalFallback() { x.localFallback.Inc() }

// SessionDropped counts a client session the gateway closed or refused, by
// reason: see gateway.Options.SessionDropped.
func (x *Metrics) SessionDropped(reason string) {
	x.sessionsDropped.WithLabelValues(reason).Inc()
}

// Handler serves the metrics in the Prometheus text format.
func (x *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(x.reg, promhttp.HandlerOpts{Registry: x.reg})
}

// Latency returns the median and the 99th percentile of the durations of
// server's calls, estimated from the histogram's buckets (linearly within
// a bucket, as Prometheus's histogram_quantile does), and how many calls
// they cover. With no call, it returns zeros.
func (x *Metrics) Latency(server string) (p50, p99 time.Duration, calls uint64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.removed[server] {
		return 0, 0, 0 // reading recreates no series
	}
	var m dto.Metric
	if err := x.duration.WithLabelValues(server).(prometheus.Metric).Write(&m); err != nil || m.Histogram == nil {
		return 0, 0, 0
	}
	h := m.Histogram
	calls = h.GetSampleCount()
	if calls == 0 {
		return 0, 0, 0
	}
	return quantile(h, 0.5), quantile(h, 0.99), calls
}

// quantile estimates the q-quantile of h.
func quantile(h *dto.Histogram, q float64) time.Duration {
	rank := q * float64(h.GetSampleCount())
	lower, below := 0.0, 0.0
	for _, b := range h.Bucket {
		upper, count := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if count >= rank {
			if count == below {
				return seconds(upper)
			}
			return seconds(lower + (upper-lower)*(rank-below)/(count-below))
		}
		lower, below = upper, count
	}
	return seconds(lower) // in the +Inf bucket: at least the last bound
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// fromStatus reports what the manager's status has at the scrape: each
// stdio server's count of skipped stdout lines (counted where they are
// read: a noisy server costs no event per line), and, for each server under
// tool pinning, its tools held and its tools that are not as pinned.
type fromStatus struct {
	skipped, held, unpinned *prometheus.Desc
	status                  atomic.Pointer[func() []switchboard.ServerStatus] // set by Follow, until stop
}

func newFromStatus() *fromStatus {
	return &fromStatus{
		skipped: prometheus.NewDesc("switchboard_upstream_stdout_skipped_lines_total",
			"Lines a stdio server wrote to stdout that were not JSON-RPC messages, skipped.", []string{"server"}, nil),
		held: prometheus.NewDesc("switchboard_tools_held",
			"Tools that tool pinning holds until a person approves them (enforce), by server.", []string{"server"}, nil),
		unpinned: prometheus.NewDesc("switchboard_tools_unpinned",
			"Tools a server lists that are not as pinned (changed, new, or that cannot be pinned or checked), held or not, by server under tool pinning.", []string{"server"}, nil),
	}
}

func (c *fromStatus) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.skipped
	ch <- c.held
	ch <- c.unpinned
}

func (c *fromStatus) Collect(ch chan<- prometheus.Metric) {
	status := c.status.Load()
	if status == nil {
		return
	}
	for _, s := range (*status)() {
		if s.Rejected {
			continue
		}
		if s.Transport == config.Stdio {
			ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(s.SkippedLines), s.Name)
		}
		if s.Pinning == "" || s.Pinning == config.PinningOff {
			continue
		}
		held, unpinned := 0, 0
		for _, tp := range s.PinChanges {
			if tp.Held {
				held++
			}
			if tp.State != switchboard.PinRemoved {
				unpinned++
			}
		}
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(held), s.Name)
		ch <- prometheus.MustNewConstMetric(c.unpinned, prometheus.GaugeValue, float64(unpinned), s.Name)
	}
}
