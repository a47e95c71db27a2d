package upstream

import (
	"context"
	"sync"
	"time"
)

// A delivery records what became of the HTTP request that carried one call:
// whether the server answered, with which status, or why it could not be
// reached. The call path puts one in the request's context; the go-sdk
// passes that context to the HTTP request that carries the call.
type delivery struct {
	mu         sync.Mutex
	done       bool // a response or an error was recorded
	status     int  // the HTTP status, or 0
	err        error
	retryAfter time.Duration
	overflowed bool // the response went over the size limit
}

// overLimit records that the response went over the size limit.
func (d *delivery) overLimit() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.overflowed = true
}

type deliveryKey struct{}

func withDelivery(ctx context.Context, d *delivery) context.Context {
	return context.WithValue(ctx, deliveryKey{}, d)
}

func deliveryFrom(ctx context.Context) *delivery {
	d, _ := ctx.Value(deliveryKey{}).(*delivery)
	return d
}

// record keeps the first outcome: the request that carried the call. Later
// ones, such as the notifications/cancelled that may follow with the same
// context, do not count.
func (d *delivery) record(status int, err error, retryAfter time.Duration) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return
	}
	d.done, d.status, d.err, d.retryAfter = true, status, err, retryAfter
}

// wasTooLarge reports whether the response went over the size limit.
func (d *delivery) wasTooLarge() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.overflowed
}

// transportFailed reports whether the request failed below HTTP: no answer,
// just a broken or refused connection.
func (d *delivery) transportFailed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done && d.err != nil
}

func (d *delivery) recorded() (done bool, status int, retryAfter time.Duration, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done, d.status, d.retryAfter, d.err
}
