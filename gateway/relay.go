package gateway

import (
	"sync"
)

// relayQueue bounds the notifications of one client request that wait to
// be sent: a client that leaves more unread loses the newest.
const relayQueue = 64

// A relay sends a client the notifications that servers send it in the
// course of one of its requests (progress, log messages), from a goroutine
// of its own. The go-sdk writes such a notification to the request's
// response, and a server's messages are read by one goroutine, which serves
// every client: it must not wait on one client's connection. The
// notifications go out in order, and all before the request's answer (see
// finish).
type relay struct {
	dropped func() // called for each notification dropped; must not block

	mu     sync.Mutex
	queue  []func()
	closed bool          // the request is answered: nothing more is sent
	idle   chan struct{} // closed when the sender stops; nil while none runs
}

// add queues send, and starts the sender if none runs. Once the request is
// answered, send is dropped; with relayQueue waiting, it is dropped and
// counted (dropped).
func (r *relay) add(send func()) {
	if r == nil {
		send() // a downstream of no request: nothing to wait for
		return
	}
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return // the answer went: too late to tell
	case len(r.queue) >= relayQueue:
		r.mu.Unlock()
		r.dropped()
		return
	}
	r.queue = append(r.queue, send)
	if r.idle == nil {
		r.idle = make(chan struct{})
		go r.run(r.idle)
	}
	r.mu.Unlock()
}

// run sends what is queued, in order, until the queue is empty, and then
// closes idle.
func (r *relay) run(idle chan struct{}) {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.idle = nil
			r.mu.Unlock()
			close(idle)
			return
		}
		send := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		r.mu.Unlock()
		send()
	}
}

// finish waits until what is queued is sent, or has failed (the client
// went away, or the write's deadline passed), and drops whatever comes
// after: the request is about to be answered.
func (r *relay) finish() {
	r.mu.Lock()
	r.closed = true
	idle := r.idle
	r.mu.Unlock()
	if idle != nil {
		<-idle
	}
}
