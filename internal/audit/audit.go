// Package audit writes the gateway's audit log, one JSON object a line,
// each line chained to the one before it by its hash, and verifies such a
// log.
//
// Every line carries "prev": the hex SHA-256 of the bytes of the line
// before it (without its newline), and "seq", its number in the chain. The
// first line of a new log has [Genesis]; a log opened on an existing file
// continues its chain from the file's last line. An edited, inserted or
// deleted line then breaks the chain, and [Verify] names the first line
// where it breaks. The last line of a log has no successor to vouch for
// it: an edit or a deletion of the last lines is found only against an
// [Anchor] kept elsewhere (see [VerifyFiles]).
//
// Rotation: with [Options.MaxBytes] set, a file that the next line would
// take past it is renamed path.1 (path.1 becomes path.2, and so on; the
// file beyond [Options.MaxFiles] is removed), and the line starts a new
// file at path. The chain goes on: the first line of the new file has the
// hash of the old file's last line as its prev, the next seq, and
// "continues": true, which tells it from a file whose first lines were
// deleted.
//
// A [Log] never makes a request wait on its file: [Log.Record] queues the
// entry (at most [QueueLines] of them) for a writer goroutine, which also
// rotates, and drops it, counted and logged, when the queue is full. A
// failed write is logged once per outage, with the number of lines lost
// when writing works again.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/userfile"
)

// Genesis is the prev of the first line of a log: 64 zeros.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// QueueLines bounds the entries waiting for the writer: past it, an entry
// is dropped (see [Log.Dropped]) rather than make a request wait.
const QueueLines = 4096

// MaxLine bounds a line's length, in bytes, as [Verify] reads it (and as
// [Open] reads an existing file's last line).
const MaxLine = 1 << 20

// MaxField bounds each string of an [Entry] (Subject, Client, Session,
// Tool, Prompt and URI come from a client), in bytes, as written: a longer
// one is cut, ending "…[cut: N bytes]", so that no request can make a line
// too long to verify or to continue from.
const MaxField = 1 << 10

// DefaultMaxFiles is how many rotated files a Log keeps when
// [Options.MaxFiles] is 0.
const DefaultMaxFiles = 10

// Options configure a [Log]. A nil *Options is the zero Options.
type Options struct {
	// Logger gets the log's own troubles (a failed write, dropped
	// entries, a failed rotation). Nil means slog.Default().
	Logger *slog.Logger
	// MaxBytes is the size past which a file is rotated: a line that
	// would take the file past it goes to a new file (a line longer than
	// it still goes whole to a file of its own). 0 never rotates; neither
	// does standard output.
	MaxBytes int64
	// MaxFiles is how many rotated files are kept, path.1 (the newest) to
	// path.MaxFiles; an older one is removed. 0 means [DefaultMaxFiles].
	MaxFiles int
}

// Outcome is how a request ended.
type Outcome string

// Outcomes.
const (
	OK     Outcome = "ok"
	Error  Outcome = "error"
	Denied Outcome = "denied" // refused by policy; it never reached a server
)

// Entry is one request, as the audit log records it: never a token, and
// an argument or a result only for a server marked for it, redacted
// ([Redact]).
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
	// Arguments and Result are set only for a server marked for it, and
	// then only as [Redact], [RedactText] and [RedactString] leave them.
	Arguments any     `json:"arguments,omitempty"`
	Result    *Result `json:"result,omitempty"`
}

// Result is what a log keeps of a request's result: its text (a tool's
// or a prompt's text content, a resource's text, completion values, one a
// line), redacted and cut, and whether it is a tool's error.
type Result struct {
	Text    string `json:"text"`
	IsError bool   `json:"isError,omitempty"`
}

// line is an Entry as written.
type line struct {
	Entry
	DurationMs float64 `json:"durationMs"`
	Seq        int64   `json:"seq"`
	Prev       string  `json:"prev"`
	// Continues marks the first line of a file that continues the chain
	// of the file before it (rotated to path.1).
	Continues bool `json:"continues,omitempty"`
	// PayloadsDropped marks a line whose arguments and result were left
	// out because with them it would be longer than MaxLine.
	PayloadsDropped bool `json:"payloadsDropped,omitempty"`
}

// capped returns e with each of its strings cut to MaxField bytes.
func (e Entry) capped() Entry {
	for _, f := range []*string{&e.Subject, &e.Client, &e.Session, &e.Server, &e.Method, &e.Tool, &e.Prompt, &e.URI, &e.ErrorClass} {
		*f = cut(*f, MaxField)
	}
	return e
}

// A Log appends entries to a file. Its methods are safe for concurrent
// use.
type Log struct {
	name     string
	logger   *slog.Logger
	maxBytes int64 // 0: never rotate
	maxFiles int
	entries  chan Entry
	done     chan struct{}

	closeOnce sync.Once

	mu      sync.Mutex // guards dropped, closed
	dropped int64
	closed  bool

	// The following are the writer goroutine's own (and Open's, before
	// it starts).
	w         io.Writer
	file      *os.File // the file w is; nil for stdout
	lock      *os.File // held while the log is open (see Open); nil for stdout
	size      int64    // of file
	prev      string
	seq       int64
	continues bool // the next line is the first of a file that continues the chain
	failing   bool
	lost      int64
	rotating  bool // a rotation is failing: logged once until one works
}

// Open opens the audit log at path ("-" for standard output) for
// appending, creating it with mode 0600, and starts its writer; [Log.Close]
// stops it. The chain continues from the file's last line or, if the file
// is empty, from the last line of path.1, the file rotated before it.
func Open(path string, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	l := newLog(path, o.Logger)
	if path == "-" {
		l.w = os.Stdout
	} else {
		l.maxBytes, l.maxFiles = max(o.MaxBytes, 0), o.MaxFiles
		if l.maxFiles <= 0 {
			l.maxFiles = DefaultMaxFiles
		}
		// Two writers of one chain would break it where their lines
		// interleave, which reads as tampering: one writer per file.
		held, err := userfile.Lock(path+".lock", false)
		if errors.Is(err, userfile.ErrLocked) {
			return nil, fmt.Errorf("audit log %s: %w", path, ErrInUse)
		}
		if err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			userfile.Unlock(held)
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if err := l.continueFrom(path, f); err != nil {
			f.Close()
			userfile.Unlock(held)
			return nil, err
		}
		l.w, l.file, l.lock = f, f, held
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
// path, open as f, and ends an unfinished last line (a crash mid-write)
// with a newline, so that the next line starts a line of its own. An empty
// file continues from path.1, if there is one.
func (l *Log) continueFrom(path string, f *os.File) error {
	last, size, complete, err := lastLine(path)
	if err != nil {
		return err
	}
	l.size = size
	if size == 0 {
		last, _, _, err = lastLine(rotated(path, 1))
		if errors.Is(err, os.ErrNotExist) || err == nil && last == nil {
			return nil
		}
		if err != nil {
			return err
		}
		l.continues = true
	}
	if !complete {
		if _, err := f.Write([]byte("\n")); err != nil {
			return fmt.Errorf("audit log: end its unfinished last line: %w", err)
		}
		l.size++
	}
	l.prev = hash(last)
	var head struct{ Seq int64 }
	if json.Unmarshal(last, &head) == nil {
		l.seq = head.Seq
	}
	return nil
}

// lastLine returns the last line of the file at path, without its
// newline (nil for an empty file), the file's size, and whether the line
// ends with a newline.
func lastLine(path string) (last []byte, size int64, complete bool, _ error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, 0, false, fmt.Errorf("audit log: %w", err)
	}
	defer r.Close()
	size, err = r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, 0, false, fmt.Errorf("audit log: %w", err)
	}
	if size == 0 {
		return nil, 0, true, nil
	}
	// The last line (at most MaxLine bytes), its newline, and the newline
	// before it.
	start := max(size-MaxLine-2, 0)
	buf := make([]byte, size-start)
	if _, err := r.ReadAt(buf, start); err != nil {
		return nil, 0, false, fmt.Errorf("audit log %s: read its last line: %w", path, err)
	}
	complete = buf[len(buf)-1] == '\n'
	if complete {
		buf = buf[:len(buf)-1]
	}
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 && start > 0 {
		return nil, 0, false, fmt.Errorf("audit log %s: its last line is %w", path, ErrLineTooLong)
	}
	return buf[i+1:], size, complete, nil
}

// rotated is the name of the n-th newest file rotated from path.
func rotated(path string, n int) string { return path + "." + strconv.Itoa(n) }

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
		if l.file != nil {
			err = l.file.Close()
		}
		userfile.Unlock(l.lock)
	})
	return err
}

// ErrInUse means another process writes the audit log: each gateway, each
// replica, needs a file of its own.
var ErrInUse = errors.New("in use by another process; each gateway (each replica) needs an audit file of its own")

// run writes the queued entries, in order, until Close.
func (l *Log) run() {
	defer close(l.done)
	for e := range l.entries {
		l.write(e)
	}
}

// write writes e as the chain's next line. Its strings are cut to
// MaxField; a line that its payloads would take past MaxLine (with
// [Redact]'s bounds it cannot be) is written without them, marked
// payloadsDropped.
func (l *Log) write(e Entry) {
	ln := line{Entry: e.capped(), DurationMs: float64(e.Duration.Microseconds()) / 1000, Seq: l.seq + 1, Prev: l.prev}
	ln.Time = ln.Time.UTC()
	b, err := l.marshal(&ln)
	if err == nil {
		l.rotateFor(int64(len(b)) + 1)
		ln.Continues = l.continues
		if l.continues {
			b, err = l.marshal(&ln)
		}
	}
	if err == nil {
		var n int
		n, err = l.w.Write(append(b, '\n'))
		l.size += int64(n)
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
	l.continues = false
}

// marshal returns ln's JSON, without its payloads if they take it past
// MaxLine (ln is then marked so), or an error if it is too long even so.
func (l *Log) marshal(ln *line) ([]byte, error) {
	b, err := json.Marshal(ln)
	if err != nil || len(b) <= MaxLine {
		return b, err
	}
	ln.Arguments, ln.Result, ln.PayloadsDropped = nil, nil, true
	l.logger.Warn("audit log: a line's payloads are dropped: with them it is too long", "file", l.name, "limit", "MaxLine", "bytes", len(b), "seq", ln.Seq)
	if b, err = json.Marshal(ln); err == nil && len(b) > MaxLine {
		err = fmt.Errorf("audit log: line %d is %w", ln.Seq, ErrLineTooLong)
	}
	return b, err
}

// rotateFor rotates the file if a line of n bytes would take it past
// maxBytes, and it holds a line already. A rotation that fails is logged
// once until one works; the lines go on to the file as it is.
func (l *Log) rotateFor(n int64) {
	if l.maxBytes == 0 || l.file == nil || l.size == 0 || l.size+n <= l.maxBytes {
		return
	}
	f, err := l.rotate()
	if err != nil {
		if !l.rotating {
			l.rotating = true
			l.logger.Error("audit log: rotation failed; the file grows past maxBytes until it works", "file", l.name, "maxBytes", l.maxBytes, "err", err)
		}
		return
	}
	if l.rotating {
		l.rotating = false
		l.logger.Warn("audit log: rotation works again", "file", l.name)
	}
	if err := l.file.Close(); err != nil {
		l.logger.Warn("audit log: close the rotated file", "file", rotated(l.name, 1), "err", err)
	}
	l.w, l.file, l.size, l.continues = f, f, 0, true
}

// rotate removes the oldest rotated file, renames path.i to path.i+1 and
// path to path.1, and returns a new file at path, mode 0600. If the new
// file cannot be made, path.1 goes back to being path.
func (l *Log) rotate() (*os.File, error) {
	path := l.name
	if err := os.Remove(rotated(path, l.maxFiles)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for i := l.maxFiles - 1; i >= 1; i-- {
		if err := os.Rename(rotated(path, i), rotated(path, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.Rename(path, rotated(path, 1)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if undo := os.Rename(rotated(path, 1), path); undo != nil {
			err = errors.Join(err, undo)
		}
		return nil, err
	}
	return f, nil
}
