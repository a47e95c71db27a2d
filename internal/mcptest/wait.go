package mcptest

import (
	"sync"
	"time"
)

// PassTime lets d pass. In a testing/synctest bubble, where the tests of
// timeouts, backoff and gates run, that is d of the bubble's fake clock,
// which advances once every goroutine in it is blocked: the test sees what
// the code under test does in d, at no cost in real time. It is not a way
// to wait for something to happen; outside a bubble, do not use it.
func PassTime(d time.Duration) {
	timer := time.NewTimer(d)
	<-timer.C
}

// Await listens, through subscribe (a Manager's Subscribe), for the first
// event that match accepts, and returns a channel that receives it: a test
// waits for something to happen by receiving from it. Later events are
// dropped, so the listener never blocks the events' sender.
func Await[E any](subscribe func(func(E)) func(), match func(E) bool) <-chan E {
	first := make(chan E, 1)
	var once sync.Once
	subscribe(func(ev E) {
		if match(ev) {
			once.Do(func() { first <- ev })
		}
	})
	return first
}
