package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigSample is what one gateway's memory did around one big result.
type bigSample struct {
	before, peak, after int64 // resident bytes: before the call, the most ever (VmHWM), a second after
}

// settle is how long after the call its "after" is read: the call's
// goroutines have ended, and the collector has not been asked to run.
const settle = time.Second

// measureBig starts setup s, calls its big tool once for o.big bytes, and
// reads the gateway's resident memory before, at its peak and after.
func measureBig(ctx context.Context, o *options, s setup) (bigSample, error) {
	measured, endpoint, tool, stop, err := launch(ctx, o, s)
	if err != nil {
		return bigSample{}, err
	}
	defer stop()
	big := strings.TrimSuffix(tool, "echo") + "big"
	c, err := connectClients(ctx, endpoint, big, 1, readyWithin)
	if err != nil {
		return bigSample{}, fmt.Errorf("%w\n%s", err, measured.tail())
	}
	defer c.close()
	pid := measured.cmd.Process.Pid
	var out bigSample
	if out.before, err = rss(pid); err != nil {
		return bigSample{}, err
	}
	res, err := c.sessions[0].CallTool(ctx, &mcp.CallToolParams{Name: big, Arguments: map[string]any{"bytes": o.big}})
	if err != nil {
		return bigSample{}, fmt.Errorf("call %s: %w\n%s", big, err, measured.tail())
	}
	if len(res.Content) != 1 || res.IsError {
		return bigSample{}, fmt.Errorf("call %s: unexpected result", big)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || len(tc.Text) != o.big {
		return bigSample{}, fmt.Errorf("call %s: the text is not %d bytes", big, o.big)
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return bigSample{}, ctx.Err()
	}
	if out.peak, err = peakRSS(pid); err != nil {
		return bigSample{}, err
	}
	if out.after, err = rss(pid); err != nil {
		return bigSample{}, err
	}
	return out, nil
}

// benchBig is the -big mode: each gateway forwards one result of o.big
// bytes, in fresh processes, round after round; it reports the gateway's
// resident memory, as megabytes and as multiples of the result's size.
func benchBig(ctx context.Context, o options) error {
	cleanup, err := prepare(ctx, &o)
	if err != nil {
		return err
	}
	defer cleanup()
	chosen := slices.DeleteFunc(choose(o), func(s setup) bool { return s.name == "direct" })
	samples := make(map[string][]bigSample)
	var skipped []string
	for round := range o.rounds {
		for i := range chosen {
			s := chosen[(i+round)%len(chosen)]
			if slices.Contains(skipped, s.name) {
				continue
			}
			got, err := measureBig(ctx, &o, s)
			if errors.Is(err, errSkipped) {
				skipped = append(skipped, s.name)
				continue
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, s.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-18s RSS %4.0f MB, peak %4.0f MB, after %4.0f MB\n", round+1, s.name,
				mb(got.before), mb(got.peak), mb(got.after))
			samples[s.name] = append(samples[s.name], got)
		}
	}
	reportBig(os.Stdout, o, chosen, samples, skipped)
	return nil
}

func reportBig(w io.Writer, o options, chosen []setup, samples map[string][]bigSample, skipped []string) {
	med := func(ss []bigSample, f func(bigSample) int64) float64 {
		return medianBy(ss, func(s bigSample) float64 { return float64(f(s)) })
	}
	fmt.Fprintf(w, "One tools/call whose result is a text of %d bytes (%.1f MiB), through each gateway over HTTP; medians of %d rounds, fresh processes each. Resident memory of the gateway (VmRSS, VmHWM); × is a multiple of the result's size.\n\n",
		o.big, float64(o.big)/(1<<20), o.rounds)
	fmt.Fprintln(w, "| setup | RSS before | peak RSS | peak − before | × result | RSS 1 s after | after − before | × result |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, s := range chosen {
		ss := samples[s.name]
		if len(ss) == 0 {
			continue
		}
		before := med(ss, func(b bigSample) int64 { return b.before })
		grew := med(ss, func(b bigSample) int64 { return b.peak - b.before })
		kept := med(ss, func(b bigSample) int64 { return b.after - b.before })
		fmt.Fprintf(w, "| %s | %.0f MB | %.0f MB | %.0f MB | **%.1f** | %.0f MB | %.0f MB | **%.1f** |\n", s.name,
			before/(1<<20), med(ss, func(b bigSample) int64 { return b.peak })/(1<<20), grew/(1<<20), grew/float64(o.big),
			med(ss, func(b bigSample) int64 { return b.after })/(1<<20), kept/(1<<20), kept/float64(o.big))
	}
	for _, name := range skipped {
		fmt.Fprintf(w, "| %s | not installed (bench/install-peers) |||||||\n", name)
	}
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
