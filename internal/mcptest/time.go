package mcptest

import "time"

// PassTime lets d pass. In a testing/synctest bubble, where the tests of
// timeouts, backoff and gates run, that is d of the bubble's fake clock,
// which advances once every goroutine in it is blocked: the test sees what
// the code under test does in d, at no cost in real time. It is not a way
// to wait for something to happen; outside a bubble, do not use it.
func PassTime(d time.Duration) {
	timer := time.NewTimer(d)
	<-timer.C
}
