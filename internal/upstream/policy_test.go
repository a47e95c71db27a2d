package upstream

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReconnectDelays(t *testing.T) {
	mid := func() float64 { return 0.5 } // no jitter
	var got []time.Duration
	var ladderFlags []bool
	for n := range 12 {
		d, onLadder := reconnectDelay(n, mid)
		got = append(got, d)
		ladderFlags = append(ladderFlags, onLadder)
	}
	want := []time.Duration{
		0, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, // the ladder
		15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{true, true, true, true, true, false, false, false, false, false, false, false}, ladderFlags); diff != "" {
		t.Errorf("on the ladder (-want +got):\n%s", diff)
	}
}

func TestJitterBounds(t *testing.T) {
	for _, tc := range []struct {
		rnd  float64
		want time.Duration
	}{
		{0, 800 * time.Millisecond},
		{0.5, time.Second},
		{0.999999, 1199999600 * time.Nanosecond},
	} {
		if got := jittered(time.Second, func() float64 { return tc.rnd }); got != tc.want {
			t.Errorf("jittered(1s) with %v = %v, want %v", tc.rnd, got, tc.want)
		}
	}
	for range 1000 {
		if d := jittered(time.Second, defaultRand); d < 800*time.Millisecond || d > 1200*time.Millisecond {
			t.Fatalf("jittered(1s) = %v, outside ±20%%", d)
		}
	}
}

func TestBreaker(t *testing.T) {
	start := time.Unix(0, 0)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	t.Run("crashes open it", func(t *testing.T) {
		var b breaker
		// Each session lives a second, then crashes.
		for i := range breakerLimit - 1 {
			if b.lost(at(time.Duration(i)*time.Second), at(time.Duration(i+1)*time.Second)) {
				t.Fatalf("open after %d crashes, want %d", i+1, breakerLimit)
			}
		}
		if !b.lost(at(9*time.Second), at(10*time.Second)) {
			t.Errorf("closed after %d crashes within %v", breakerLimit, breakerWindow)
		}
		// While open, any crash keeps it open, however late.
		if !b.lost(at(time.Hour), at(time.Hour+time.Second)) {
			t.Error("a crash while open closed it")
		}
		b.reset()
		if b.open || b.lost(at(2*time.Hour), at(2*time.Hour+time.Second)) {
			t.Error("open after a reset and one crash")
		}
	})
	t.Run("old crashes leave the window", func(t *testing.T) {
		var b breaker
		for i := range breakerLimit - 1 {
			b.lost(at(time.Duration(i)*time.Second), at(time.Duration(i)*time.Second+time.Millisecond))
		}
		// The first crash was 30 s ago: it no longer counts.
		if b.lost(at(30*time.Second), at(30*time.Second+time.Millisecond)) {
			t.Error("open with a crash outside the window counted")
		}
	})
	t.Run("a stable session is no crash and clears the history", func(t *testing.T) {
		var b breaker
		for i := range breakerLimit - 1 {
			b.lost(at(time.Duration(i)*time.Second), at(time.Duration(i)*time.Second+time.Millisecond))
		}
		if b.lost(at(10*time.Second), at(10*time.Second+stablePeriod)) || len(b.crashes) != 0 {
			t.Errorf("a session lost after %v counted as a crash: %d crashes kept", stablePeriod, len(b.crashes))
		}
	})
}
