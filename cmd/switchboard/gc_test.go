package main

import (
	"log/slog"
	"runtime/debug"
	"testing"
)

// TestTuneGC: serve raises the collector's target, unless GOGC or
// GOMEMLIMIT is set, which then rules.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{nil, gatewayGCPercent},
		{map[string]string{"GOGC": ""}, gatewayGCPercent},
		{map[string]string{"GOGC": "50"}, 100},
		{map[string]string{"GOMEMLIMIT": "1GiB"}, 100},
	} {
		debug.SetGCPercent(100)
		tuneGC(func(name string) (string, bool) { v, ok := tc.env[name]; return v, ok }, slog.New(slog.DiscardHandler))
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("with %v: GOGC %d, want %d", tc.env, got, tc.want)
		}
	}
}
