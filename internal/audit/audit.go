// Package audit writes the gateway's audit log, one JSON object a line,
// each line chained to the one before it by its hash, and verifies such a
// log.
//
// Every line carries "prev": the hex SHA-256 of the bytes of the line
// before it (without its newline). The first line of a new or empty file
// has [Genesis]; a log opened on an existing file continues its chain from
// the file's last line. An edited, inserted or deleted line then breaks the
// chain, and [Verify] names the first line where it breaks. (Rotation is
// not done: a log is one file. The last line of a file has no successor
// to vouch for it, so an edit or a deletion of the last lines alone goes
// unseen, but a truncation of the last line does not.)
//
// A [Log] never makes a request wait on its file: [Log.Record] queues the
// entry (at most [QueueLines] of them) for a writer goroutine, and drops it,
// counted and logged, when the queue is full. A failed write is logged once
// per outage, with the number of lines lost when writing works again.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Genesis is the prev of the first line of a log: 64 zeros.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// QueueLines bounds the entries waiting for the writer: past it, an entry
// is dropped (see [Log.Dropped]) rather than make a request wait.
const QueueLines = 4096

// MaxLine bounds a line's length, in bytes, as [Verify] reads it (and as
// [Open] reads an existing file's last line).
const MaxLine = 1 << 20

// Outcome is how a request ended.
type Outcome string

// Outcomes.
const (
	OK     Outcome = "ok"
	Error  Outcome = "error"
	Denied Outcome = "denied" // refused by policy; it never reached a server
)

// Entry is one request, as the audit log records it: never a token, an
// argument or a result.
type Entry struct {
	Time       time.Time     `json:"time"`
	Subject    string        `json:"subject"` // "" for a session without a verified identity
	Client     string        `json:"client,omitempty"`
	Session    string        `json:"session,omitempty"`
	Server     string        `json:"server"`
	Method     string        `json:"method"`
	Tool       string        `json:"tool,omitempty"`
	Prompt     string        `json:"prompt,omitempty"`
	URI        string        `json:"uri,omitempty"`
	Outcome    Outcome       `json:"outcome"`
	Duration   time.Duration `json:"-"`
	ErrorClass string        `json:"errorClass,omitempty"` // set when Outcome is not OK
}

// line is an Entry as written.
type line struct {
	Entry
	DurationMs float64 `json:"durationMs"`
	Seq        int64   `json:"seq"`
	Prev       string  `json:"prev"`
}

// A Log appends entries to a file. Its methods are safe for concurrent
// use.
type Log struct {
	w       io.Writer
	closer  io.Closer // nil for stdout
	name    string
	logger  *slog.Logger
	entries chan Entry
	done    chan struct{}

	closeOnce sync.Once

	mu      sync.Mutex // guards dropped, closed
	dropped int64
	closed  bool

	// The following are the writer goroutine's own.
	prev    string
	seq     int64
	failing bool
	lost    int64
}

// Open opens the audit log at path ("-" for stdout) for appending,
// creating it with mode 0600, and starts its writer; [Log.Close] stops it.
// A nil logger is slog.Default().
func Open(path string, logger *slog.Logger) (*Log, error) {
	l := newLog(path, logger)
	if path == "-" {
		l.w = os.Stdout
	} else {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if err := l.continueFrom(path, f); err != nil {
			f.Close()
			return nil, err
		}
		l.w, l.closer = f, f
	}
	go l.run()
	return l, nil
}

// newLog returns a Log with an empty chain and no writer yet.
func newLog(name string, logger *slog.Logger) *Log {
	if logger == nil {
		logger = slog.Default()
	}
	return &Log{name: name, logger: logger, prev: Genesis, entries: make(chan Entry, QueueLines), done: make(chan struct{})}
}

// continueFrom sets the chain's head from the last line of the file at
// path, and ends an unfinished last line (a crash mid-write) with a
// newline, so that the next line starts a line of its own.
func (l *Log) continueFrom(path string, f *os.File) error {
	r, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer r.Close()
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if size == 0 {
		return nil
	}
	start := max(size-MaxLine-1, 0)
	buf := make([]byte, size-start)
	if _, err := r.ReadAt(buf, start); err != nil {
		return fmt.Errorf("audit log: read its last line: %w", err)
	}
	if buf[len(buf)-1] != '\n' {
		if _, err := f.Write([]byte("\n")); err != nil {
			return fmt.Errorf("audit log: end its unfinished last line: %w", err)
		}
	} else {
		buf = buf[:len(buf)-1]
	}
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 && start > 0 {
		return fmt.Errorf("audit log %s: its last line is %w", path, ErrLineTooLong)
	}
	last := buf[i+1:]
	l.prev = hash(last)
	var head struct{ Seq int64 }
	if json.Unmarshal(last, &head) == nil {
		l.seq = head.Seq
	}
	return nil
}

func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Record queues e for writing; it never waits. An entry that finds the
// queue full, or the log closed, is dropped and counted.
func (l *Log) Record(e Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.dropped++
		return
	}
	select {
	case l.entries <- e:
	default:
		l.dropped++
		if l.dropped == 1 || l.dropped%QueueLines == 0 {
			l.logger.Warn("audit log: the writer falls behind: entries dropped", "file", l.name, "limit", "QueueLines", "queued", QueueLines, "dropped", l.dropped)
		}
	}
}

// Dropped returns how many entries were dropped because the queue was
// full or the log closed.
func (l *Log) Dropped() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// Close writes what is queued, stops the writer and closes the file. It is
// idempotent.
func (l *Log) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.entries)
		l.mu.Unlock()
		<-l.done
		if l.closer != nil {
			err = l.closer.Close()
		}
	})
	return err
}

// run writes the queued entries, in order, until Close.
func (l *Log) run() {
	defer close(l.done)
	for e := range l.entries {
		l.write(e)
	}
}

func (l *Log) write(e Entry) {
	ln := line{Entry: e, DurationMs: float64(e.Duration.Microseconds()) / 1000, Seq: l.seq + 1, Prev: l.prev}
	ln.Time = ln.Time.UTC()
	b, err := json.Marshal(ln)
	if err == nil {
		_, err = l.w.Write(append(b, '\n'))
	}
	if err != nil {
		l.lost++
		if !l.failing {
			l.failing = true
			l.logger.Error("audit log: write failed; entries are lost until it works again", "file", l.name, "err", err)
		}
		return
	}
	if l.failing {
		l.failing = false
		l.logger.Warn("audit log: writing works again", "file", l.name, "lost", l.lost)
		l.lost = 0
	}
	l.seq++
	l.prev = hash(b)
}
