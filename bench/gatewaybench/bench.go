package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/proctree"
)

const (
	defaultDuration = 4 * time.Second
	defaultWarmup   = time.Second
	readyWithin     = 30 * time.Second
)

type options struct {
	rounds           int
	duration, warmup time.Duration
	sessions         int
	switchboard      string
	compare          string // another switchboard binary, measured beside
	tbxark           string
	smoke            bool
	big              int // -big: the size of the one result to forward; 0: measure load
	only             string
	dir              string // scratch: configs, logs, caches
}

// setup is one way of serving the echo tool: what to start, and where to
// call it.
type setup struct {
	name string
	// upstream is "http" when the setup needs the echo upstream over HTTP,
	// started first; its URL is passed to start.
	upstream string
	// start starts the setup's process, and answers it with the endpoint
	// and tool name to call.
	start func(o *options, upstreamURL string) (p *process, endpoint, tool string, err error)
}

var setups = []setup{
	{name: "direct", upstream: "http", start: func(o *options, u string) (*process, string, string, error) {
		return nil, u, "echo", nil // the measured process is the upstream itself
	}},
	{name: "switchboard-http", upstream: "http", start: func(o *options, u string) (*process, string, string, error) {
		return startSwitchboard(o, o.switchboard, "switchboard-http", map[string]any{"type": "http", "url": u})
	}},
	{name: "switchboard-stdio", start: func(o *options, _ string) (*process, string, string, error) {
		return startSwitchboard(o, o.switchboard, "switchboard-stdio", map[string]any{"command": self(), "args": []string{"upstream", "--stdio"}})
	}},
	{name: "goproxy-http", upstream: "http", start: func(o *options, u string) (*process, string, string, error) {
		return startListener(o, "goproxy-http", "/mcp", "echo", self(), "proxy", "--upstream", u, "--listen")
	}},
	{name: "goproxy-stdio", start: func(o *options, _ string) (*process, string, string, error) {
		return startListener(o, "goproxy-stdio", "/mcp", "echo", self(), "proxy", "--upstream-stdio", "--listen")
	}},
	{name: "tbxark-http", upstream: "http", start: func(o *options, u string) (*process, string, string, error) {
		return startTBXark(o, "tbxark-http", map[string]any{"url": u, "transportType": "streamable-http"})
	}},
	{name: "tbxark-stdio", start: func(o *options, _ string) (*process, string, string, error) {
		return startTBXark(o, "tbxark-stdio", map[string]any{"command": self(), "args": []string{"upstream", "--stdio"}})
	}},
}

// process is one started program, with its log in a file.
type process struct {
	name string
	cmd  *exec.Cmd
	tree *proctree.Tree
	log  string
}

func start(o *options, name string, argv ...string) (*process, error) {
	logPath := filepath.Join(o.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Each program runs with its own garbage collector settings, as
	// shipped: none is given the harness's GOGC or GOMEMLIMIT.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=")
	})
	cmd.Env = append(env, "XDG_CACHE_HOME="+filepath.Join(o.dir, "cache"), "XDG_CONFIG_HOME="+filepath.Join(o.dir, "config"))
	tree, err := proctree.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &process{name: name, cmd: cmd, tree: tree, log: logPath}, nil
}

// stop ends p and what it started: SIGTERM, then SIGKILL after 5 s.
func (p *process) stop() {
	if p == nil {
		return
	}
	defer p.tree.Release()
	p.tree.Interrupt()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.tree.Kill()
		<-done
	}
	p.tree.Kill() // any child left behind
}

// tail is the end of p's log, for an error.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// startListener starts argv with a free address appended, and answers the
// endpoint at path on it.
func startListener(o *options, name, path, tool string, argv ...string) (*process, string, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	p, err := start(o, name, append(argv, addr)...)
	if err != nil {
		return nil, "", "", err
	}
	return p, "http://" + addr + path, tool, nil
}

// compareSetups measure the -compare binary as the switchboard setups
// measure theirs.
var compareSetups = []setup{
	{name: "compare-http", upstream: "http", start: func(o *options, u string) (*process, string, string, error) {
		return startSwitchboard(o, o.compare, "compare-http", map[string]any{"type": "http", "url": u})
	}},
	{name: "compare-stdio", start: func(o *options, _ string) (*process, string, string, error) {
		return startSwitchboard(o, o.compare, "compare-stdio", map[string]any{"command": self(), "args": []string{"upstream", "--stdio"}})
	}},
}

func startSwitchboard(o *options, binary, name string, server map[string]any) (*process, string, string, error) {
	path, err := writeJSON(o, name+".json", map[string]any{"mcpServers": map[string]any{"echo": server}})
	if err != nil {
		return nil, "", "", err
	}
	return startListener(o, name, "/mcp", "echo__echo", binary, "serve", "--config", path, "--listen")
}

func startTBXark(o *options, name string, server map[string]any) (*process, string, string, error) {
	if o.tbxark == "" {
		return nil, "", "", errSkipped
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	path, err := writeJSON(o, name+".json", map[string]any{
		"mcpProxy": map[string]any{"baseURL": "http://" + addr, "addr": addr, "name": "tbxark", "version": "1",
			"type": "streamable-http", "options": map[string]any{"logEnabled": false}},
		"mcpServers": map[string]any{"echo": server},
	})
	if err != nil {
		return nil, "", "", err
	}
	p, err := start(o, name, o.tbxark, "--config", path)
	if err != nil {
		return nil, "", "", err
	}
	return p, "http://" + addr + "/echo/", "echo", nil
}

// errSkipped is a setup whose program is not installed.
var errSkipped = errors.New("not installed")

func writeJSON(o *options, name string, v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.dir, name)
	return path, os.WriteFile(path, b, 0o600)
}

// sample is what one setup measured in one round.
type sample struct {
	perSecond   float64
	p50, p99    time.Duration
	cpuPerCall  time.Duration
	peakRSS     int64
	rateP50     time.Duration // at the fixed rate
	rateP99     time.Duration
	rateCalls   int
	closedCalls int
}

// launch starts setup s, with its upstream if it needs one over HTTP, and
// returns the process to measure (the gateway's; for direct, the
// upstream's), the endpoint and tool name to call, and stop, which ends
// them.
func launch(ctx context.Context, o *options, s setup) (measured *process, endpoint, tool string, stop func(), err error) {
	var upstream *process
	var upstreamURL string
	if s.upstream == "http" {
		p, u, _, err := startListener(o, s.name+"-upstream", "/mcp", "echo", self(), "upstream", "--listen")
		if err != nil {
			return nil, "", "", nil, err
		}
		upstream, upstreamURL = p, u
		// Not every gateway retries an upstream that is not there yet.
		if err := waitListening(ctx, strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp"), readyWithin); err != nil {
			upstream.stop()
			return nil, "", "", nil, fmt.Errorf("%w\n%s", err, upstream.tail())
		}
	}
	p, endpoint, tool, err := s.start(o, upstreamURL)
	if err != nil {
		upstream.stop()
		return nil, "", "", nil, err
	}
	measured = p
	if measured == nil {
		measured = upstream
	}
	return measured, endpoint, tool, func() {
		p.stop()
		upstream.stop()
	}, nil
}

// measure runs one setup once: closed loop, then, if rate > 0, fixed rate.
func measure(ctx context.Context, o *options, s setup, rate float64) (sample, error) {
	measured, endpoint, tool, stop, err := launch(ctx, o, s)
	if err != nil {
		return sample{}, err
	}
	defer stop()
	c, err := connectClients(ctx, endpoint, tool, o.sessions, readyWithin)
	if err != nil {
		return sample{}, fmt.Errorf("%w\n%s", err, measured.tail())
	}
	defer c.close()
	pid := measured.cmd.Process.Pid
	check := func(phase string, r *loadResult) error {
		switch {
		case r.errs > 0:
			return fmt.Errorf("%s: %d calls failed: %w\n%s", phase, r.errs, r.firstErr, measured.tail())
		case r.calls == 0:
			return fmt.Errorf("%s: no call answered\n%s", phase, measured.tail())
		}
		return nil
	}
	if err := check("warmup", c.closedLoop(ctx, 0, o.warmup)); err != nil {
		return sample{}, err
	}
	cpu0, err := cpuTime(pid)
	if err != nil {
		return sample{}, err
	}
	r := c.closedLoop(ctx, 0, o.duration)
	cpu1, err := cpuTime(pid)
	if err != nil {
		return sample{}, err
	}
	if err := check("closed loop", r); err != nil {
		return sample{}, err
	}
	out := sample{perSecond: r.perSecond(), p50: r.quantile(0.5), p99: r.quantile(0.99), closedCalls: r.calls,
		cpuPerCall: (cpu1 - cpu0) / time.Duration(r.calls)}
	if rate > 0 {
		fr := c.fixedRate(ctx, rate, o.warmup/2, o.duration)
		if err := check("fixed rate", fr); err != nil {
			return sample{}, err
		}
		out.rateP50, out.rateP99, out.rateCalls = fr.quantile(0.5), fr.quantile(0.99), fr.calls
	}
	if out.peakRSS, err = peakRSS(pid); err != nil {
		return sample{}, err
	}
	return out, nil
}

// prepare makes the scratch directory and finds or builds the programs.
func prepare(ctx context.Context, o *options) (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "gatewaybench-")
	if err != nil {
		return nil, err
	}
	o.dir = dir
	if o.switchboard == "" {
		o.switchboard = filepath.Join(dir, "switchboard")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.switchboard, "github.com/switchboard-mcp/switchboard/cmd/switchboard")
		if out, err := build.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("building switchboard: %w\n%s", err, out)
		}
	}
	if o.tbxark == "" {
		if o.tbxark, err = exec.LookPath("mcp-proxy"); err != nil {
			o.tbxark, _ = exec.LookPath(filepath.Join(".ci", "bin", "mcp-proxy"))
		}
	}
	return func() { os.RemoveAll(dir) }, nil
}

// choose returns the setups that o chooses: -only's, with -compare's, and
// the baseline.
func choose(o options) []setup {
	only := regexp.MustCompile(o.only)
	var chosen []setup
	all := setups
	if o.compare != "" {
		all = append(slices.Clip(setups), compareSetups...)
	}
	for _, s := range all {
		if s.name == "direct" || only.MatchString(s.name) {
			chosen = append(chosen, s)
		}
	}
	return chosen
}

func bench(ctx context.Context, o options) error {
	if o.smoke {
		o.rounds, o.duration, o.warmup = 1, time.Second, 200*time.Millisecond
	}
	cleanup, err := prepare(ctx, &o)
	if err != nil {
		return err
	}
	defer cleanup()
	chosen := choose(o)

	// The fixed rate: half of switchboard-http's peak, calibrated once,
	// after a longer warmup (the first run of a fresh binary is slower).
	var rate float64
	if cal := slices.IndexFunc(setups, func(s setup) bool { return s.name == "switchboard-http" }); cal >= 0 {
		co := o
		co.warmup *= 3
		s, err := measure(ctx, &co, setups[cal], 0)
		if err != nil {
			return fmt.Errorf("calibration, %s: %w", setups[cal].name, err)
		}
		rate = s.perSecond / 2
	}
	fmt.Fprintf(os.Stderr, "fixed rate: %.0f calls/s; %d rounds of %d setups, %v each phase, %d sessions\n",
		rate, o.rounds, len(chosen), o.duration, o.sessions)

	samples := make(map[string][]sample)
	var skipped []string
	for round := range o.rounds {
		for i := range chosen {
			s := chosen[(i+round)%len(chosen)] // each round starts with another setup
			if slices.Contains(skipped, s.name) {
				continue
			}
			got, err := measure(ctx, &o, s, rate)
			if errors.Is(err, errSkipped) {
				skipped = append(skipped, s.name)
				continue
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, s.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-18s %7.0f calls/s  p99 %v  cpu/call %v\n", round+1, s.name, got.perSecond, got.p99, got.cpuPerCall)
			samples[s.name] = append(samples[s.name], got)
		}
	}
	if o.smoke {
		for _, s := range chosen {
			if !slices.Contains(skipped, s.name) {
				fmt.Printf("ok  %s: %d calls checked, closed loop and fixed rate\n", s.name, samples[s.name][0].closedCalls+samples[s.name][0].rateCalls)
			}
		}
		for _, name := range skipped {
			fmt.Printf("skip %s: not installed (bench/install-peers)\n", name)
		}
		return nil
	}
	report(os.Stdout, o, rate, chosen, samples, skipped)
	return nil
}

// report prints the medians over rounds, each as a ratio to the same
// round's baseline, as Markdown.
func report(w io.Writer, o options, rate float64, chosen []setup, samples map[string][]sample, skipped []string) {
	base := samples["direct"]
	// ratio is the median over rounds of f(subject)/f(baseline), each
	// round's subject against the same round's baseline.
	ratio := func(subject, baseline []sample, f func(sample) float64) float64 {
		var rs []float64
		for i := range min(len(subject), len(baseline)) {
			if b := f(baseline[i]); b > 0 {
				rs = append(rs, f(subject[i])/b)
			}
		}
		return median(rs)
	}
	perSecond := func(s sample) float64 { return s.perSecond }
	p50 := func(s sample) float64 { return s.p50.Seconds() }
	p99 := func(s sample) float64 { return s.p99.Seconds() }
	cpu := func(s sample) float64 { return s.cpuPerCall.Seconds() }
	rss := func(s sample) float64 { return float64(s.peakRSS) }
	rateP99 := func(s sample) float64 { return s.rateP99.Seconds() }
	fmt.Fprintf(w, "%d sessions calling a 1 KiB echo tool back to back; medians of %d interleaved rounds of %v each; ratios are per round, to the same round's `direct`.\n\n",
		o.sessions, o.rounds, o.duration)
	fmt.Fprintln(w, "| setup | calls/s | × direct | p50 | p99 | p99 × direct | CPU/call | peak RSS | p99 at fixed rate | × direct |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range chosen {
		ss := samples[s.name]
		if len(ss) == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %.0f | **%.2f** | %s | %s | %.2f | %s | %.0f MB | %s | **%.2f** |\n", s.name,
			medianBy(ss, perSecond), ratio(ss, base, perSecond), seconds(medianBy(ss, p50)), seconds(medianBy(ss, p99)), ratio(ss, base, p99),
			seconds(medianBy(ss, cpu)), medianBy(ss, rss)/(1<<20), seconds(medianBy(ss, rateP99)), ratio(ss, base, rateP99))
	}
	for _, name := range skipped {
		fmt.Fprintf(w, "| %s | not installed (bench/install-peers) |||||||||\n", name)
	}
	fmt.Fprintf(w, "\nThe fixed rate is %.0f calls/s, half of switchboard-http's calibrated peak. CPU/call is the measured process's (the gateway's; for `direct`, the upstream's).\n\n", rate)

	fmt.Fprintln(w, "| target | figure | value | goal |")
	fmt.Fprintln(w, "|---|---|---|---|")
	target := func(id, figure string, v float64, goal string, ok bool) {
		mark := "met"
		if !ok {
			mark = "**missed**"
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %s (%s) |\n", id, figure, v, goal, mark)
	}
	if sb := samples["switchboard-http"]; len(sb) > 0 {
		v := ratio(sb, base, perSecond)
		target("P2", "throughput via HTTP upstream, × direct", v, "≥ 0.75", v >= 0.75)
		if px := samples["goproxy-http"]; len(px) > 0 {
			v := ratio(sb, px, cpu)
			target("P2c", "CPU per call via HTTP upstream, × minimal go-sdk proxy", v, "≤ 1.10", v <= 1.10)
		}
		v = ratio(sb, base, rateP99)
		target("P3", "p99 at the fixed rate, × direct", v, "≤ 1.3", v <= 1.3)
		v = medianBy(sb, rss) / (1 << 20)
		target("P2m", "peak RSS under load, MB", v, "≤ 64", v <= 64)
	}
	if sb := samples["switchboard-stdio"]; len(sb) > 0 {
		v := ratio(sb, base, perSecond)
		target("P2s", "throughput via stdio upstream, × direct HTTP", v, "≥ 0.95", v >= 0.95)
		if tb := samples["tbxark-stdio"]; len(tb) > 0 {
			v := ratio(sb, tb, perSecond)
			target("P2s", "throughput via stdio upstream, × TBXark via stdio", v, "≥ 1", v >= 1)
		}
		if px := samples["goproxy-stdio"]; len(px) > 0 {
			v := ratio(sb, px, cpu)
			target("P2c", "CPU per call via stdio upstream, × minimal go-sdk proxy", v, "≤ 1.10", v <= 1.10)
		}
	}
}

// medianBy is the median of f over ss.
func medianBy[S any](ss []S, f func(S) float64) float64 {
	var vs []float64
	for _, s := range ss {
		vs = append(vs, f(s))
	}
	return median(vs)
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if n := len(vs); n%2 == 1 {
		return vs[n/2]
	} else {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
}

// seconds shows a duration given in seconds.
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}
