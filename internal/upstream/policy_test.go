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
	var b breaker
	start := time.Unix(0, 0)
	for i := range breakerLimit {
		if !b.allow(start.Add(time.Duration(i) * time.Second)) {
			t.Fatalf("attempt %d refused, want %d allowed", i+1, breakerLimit)
		}
	}
	if b.allow(start.Add(10 * time.Second)) {
		t.Error("a seventh attempt within 30 s was allowed")
	}
	// The first attempt leaves the window 30 s after it was made.
	if !b.allow(start.Add(30 * time.Second)) {
		t.Error("an attempt refused after the oldest one left the window")
	}
	if b.allow(start.Add(30*time.Second + time.Millisecond)) {
		t.Error("the window holds six attempts again; a seventh was allowed")
	}
	b.reset()
	if !b.allow(start.Add(31 * time.Second)) {
		t.Error("an attempt refused after reset")
	}
}
