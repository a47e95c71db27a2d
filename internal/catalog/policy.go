package catalog

import (
	"context"
	"fmt"
	"log/slog"
)

// Filter returns the items that keep keeps, in order; the slice is new, the
// items are the input values. A nil keep keeps everything. kind names the
// items in logs ("tool", "prompt", "resource"), and describe gives the
// server and name of an item.
//
// A keep that returns an error, or panics, excludes that item: the failure
// is logged at error level on logger (nil discards) with the server and the
// item's name, and the other items are still filtered. Once ctx is done the
// remaining items are excluded without asking keep, and that is logged
// once, so a cancelled query neither leaks unfiltered items nor floods the
// log.
func Filter[T any](ctx context.Context, items []T, kind string, describe func(T) (server, name string), keep func(context.Context, T) (bool, error), logger *slog.Logger) []T {
	out := make([]T, 0, len(items))
	if keep == nil {
		return append(out, items...)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for i, item := range items {
		if err := ctx.Err(); err != nil {
			logger.ErrorContext(ctx, fmt.Sprintf("dynamic %s filter stopped; remaining %ss excluded", kind, kind),
				"excluded", len(items)-i, "err", err)
			break
		}
		ok, err := Guard(func() (bool, error) { return keep(ctx, item) })
		if err != nil {
			server, name := describe(item)
			logger.ErrorContext(ctx, fmt.Sprintf("dynamic %s filter failed; %s excluded", kind, kind),
				"server", server, kind, name, "err", err)
			continue
		}
		if ok {
			out = append(out, item)
		}
	}
	return out
}

// Guard calls f, turning a panic into an error, so that one bad filter or
// policy cannot take down the host.
func Guard(f func() (bool, error)) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}
