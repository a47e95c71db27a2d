package mcptest

import (
	"bytes"
	"sync"
)

// A LogBuffer collects what loggers of several goroutines write, for a
// test to read. It is safe for concurrent use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns all that was written.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A Tail keeps the last Max bytes written to it: the end of a process's
// output, for the error of a test harness. It is safe for concurrent use.
type Tail struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

func (w *Tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.Max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// String returns the bytes kept.
func (w *Tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
