package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// What a stdio server prints on stdout is not always JSON-RPC: a banner
// before the handshake, a stray print mid-session, a logger's JSON line.
// The go-sdk's stdio transport decodes stdout as one stream of JSON values,
// and ends the session at the first byte that is not JSON or the first
// value that is not a message. The official TypeScript and Python SDKs skip
// a line that is not a message, and go on. So does the stdoutFilter, which
// sits between the pipe and the transport: only JSON-RPC messages reach
// the transport.
//
// A line is a message if, less the JSON whitespace around it (which takes
// care of "\r\n"), it is one JSON value and nothing more, and decodes as
// the go-sdk decodes messages: an object with "jsonrpc": "2.0" that is a
// request, a notification or a response, or a non-empty array of them (a
// batch). That is exactly what the transport accepts, so no line that
// passes can end the session, whatever the order of its keys. A blank line
// is skipped silently: it is whitespace between JSON values, which the
// transport would skip too, and no sign of trouble.
//
// A pretty-printer writes a message over several lines, which the
// transport, reading a stream of JSON values, used to take. A line that is
// not a message but starts one (it is the start of a JSON object or array
// that goes on past it) is judged with the lines that follow, as one,
// until the value ends, up to judgeLimit bytes; a line on its own that is a
// message ends such a gathering, whose lines are then skipped.
//
// A line is judged whole if it ends within judgeLimit bytes. A longer one,
// a large result, is not held: if it starts like JSON it is passed on as
// it streams, and the transport's own limit (maxResponseBytes) still
// refuses one that is too large; otherwise it is skipped as it streams.
// Such a line that starts like JSON but is not a message still ends the
// session: a cost paid only by lines over 64 KiB.

// judgeLimit is the longest line that is judged whole.
const judgeLimit = 64 << 10

// keptBuffer is the largest buffer kept between lines: one grown past it,
// for a line that several reads brought, is dropped once spent, so that an
// idle server holds little.
const keptBuffer = 4 << 10

// What the filter does with the line it is in.
type lineMode int

const (
	judging  lineMode = iota // the line is held until its end is read, then judged
	passing                  // a long line that starts like JSON: passed on as it streams
	dropping                 // a long line that does not: skipped as it streams
)

// A stdoutFilter reads a stdio server's stdout and passes on only the lines
// that are JSON-RPC messages, each with its newline; it skips the others,
// and tells skip of each. It counts the notifications that handlers
// forward, for [noteCount]. It is read by one goroutine, the transport's.
//
// The usual read brings whole lines: they are judged where the transport's
// buffer holds them, and the ones that pass are moved to its front, with
// no copy for the first. Only a line that a read leaves unfinished is
// held, in a buffer of the filter's, until it is judged.
type stdoutFilter struct {
	r     io.ReadCloser
	notes *noteCount
	// skip is told of each line skipped, with its start (at most
	// judgeLimit bytes, without the whitespace around a shorter line). It
	// must not keep it.
	skip func(line []byte)

	// lines counts the lines skipped, and unended is the length of the
	// line the filter holds for want of its newline, 0 if none: for an
	// error that explains a handshake that never ended. Read by anyone.
	lines   atomic.Int64
	unended atomic.Int64

	mode  lineMode
	value valueScan // a message printed over several lines, being gathered
	buf   []byte    // holds out, then tail
	out   []byte    // judged bytes ready to be read, at the start of buf
	tail  []byte    // the start of a line that no read has ended yet, in buf
	err   error     // the read error, returned once out is spent
}

func newStdoutFilter(r io.ReadCloser, notes *noteCount, skip func([]byte)) *stdoutFilter {
	return &stdoutFilter{r: r, notes: notes, skip: skip}
}

func (f *stdoutFilter) Close() error { return f.r.Close() }

func (f *stdoutFilter) Read(p []byte) (int, error) {
	for {
		if len(f.out) > 0 {
			n := copy(p, f.out)
			f.out = f.out[n:]
			return n, nil
		}
		if f.err != nil {
			return 0, f.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		if len(f.tail) > 0 {
			f.readMore()
			continue
		}
		// The read starts a line, or continues a long one: it lands in p,
		// where what passes is moved to the front.
		if cap(f.buf) > keptBuffer {
			f.buf = nil
		}
		n, err := f.r.Read(p[:min(len(p), judgeLimit)])
		w, tail := f.sift(p[:n], 0)
		f.hold(p[tail:n])
		f.end(err)
		if w > 0 {
			return w, nil
		}
	}
}

// hold keeps the start of an unfinished line, at the start of buf.
func (f *stdoutFilter) hold(line []byte) {
	if len(line) == 0 {
		return
	}
	if cap(f.buf) < len(line)+keptBuffer/2 {
		f.buf = make([]byte, 0, max(keptBuffer, len(line)+keptBuffer/2))
	}
	f.tail = f.buf[:copy(f.buf[:len(line)], line)]
}

// readMore reads the rest of the line held in tail after it, and sifts
// what it has then.
func (f *stdoutFilter) readMore() {
	n := len(f.tail)
	if &f.tail[0] != &f.buf[:1][0] {
		copy(f.buf[:n], f.tail) // after out, now spent
	}
	if cap(f.buf)-n < keptBuffer/2 {
		grown := make([]byte, 2*cap(f.buf))
		f.buf = grown[:copy(grown, f.buf[:n])]
	}
	data := f.buf[:cap(f.buf)]
	m, err := f.r.Read(data[n:])
	data = data[:n+m]
	w, tail := f.sift(data, n)
	f.out, f.tail = data[:w], data[tail:]
	f.end(err)
}

// end ends a read: it records the length of the line held for want of its
// newline, for explain, and err, the read's error, if any. A last line
// that no newline ends is then judged as it is (and what explain tells is
// what the stream ended with).
func (f *stdoutFilter) end(err error) {
	f.unended.Store(int64(len(f.tail)))
	if err == nil {
		return
	}
	f.err = err
	if len(f.tail) > 0 && f.mode == judging {
		if msg, ok := f.judge(f.tail); ok {
			n := copy(f.buf[len(f.out):cap(f.buf)], msg)
			f.out = f.buf[:len(f.out)+n]
		}
	}
	f.tail = nil
}

// sift filters data in place: it moves what passes to the front, and
// returns its length, w, and where a line that data leaves unfinished
// starts, tail (len(data) if none). The first line of data has no newline
// before scanned.
func (f *stdoutFilter) sift(data []byte, scanned int) (w, tail int) {
	r := 0
	for r < len(data) {
		rest := data[r:]
		i := bytes.IndexByte(rest[scanned:], '\n')
		if i >= 0 {
			i += scanned
		}
		switch {
		case f.value.open && (i < 0 && len(rest) > judgeLimit || i > judgeLimit):
			// Gathered too long to judge: its lines are skipped, and the
			// line it reached starts afresh.
			f.skipLines(rest[:f.value.fed])
			r += f.value.fed
			f.value = valueScan{}
		case f.mode == judging && i < 0 && len(rest) <= judgeLimit:
			return w, r // held until its end is read
		case f.mode == judging && (i < 0 || i > judgeLimit):
			f.mode = f.long(rest[:judgeLimit])
			scanned = i // known now, if found
			if i < 0 {
				scanned = len(rest)
			}
			continue
		case f.mode == judging:
			msg, v := f.gather(rest, i)
			switch v {
			case gathering:
				scanned = i + 1 // the value goes on: judged with the next line
				continue
			case passed:
				w += copy(data[w:], msg)
				data[w] = '\n' // where the line's own newline was, or before
				w++
			}
			r += i + 1
		default: // the rest of a long line
			end := len(rest)
			if i >= 0 {
				end = i + 1
			}
			if f.mode == passing {
				if w != r {
					copy(data[w:], rest[:end])
				}
				w += end
			}
			r += end
			if i >= 0 {
				f.mode = judging
			}
		}
		scanned = 0
	}
	return w, len(data)
}

// long decides what to do with a line longer than judgeLimit, given its
// start: pass it on if it starts like JSON, else skip it.
func (f *stdoutFilter) long(start []byte) lineMode {
	if s := bytes.TrimLeft(start, jsonSpace); len(s) > 0 && (s[0] == '{' || s[0] == '[') {
		return passing
	}
	f.skipped(start)
	return dropping
}

// jsonSpace is the whitespace JSON allows around a value.
const jsonSpace = " \t\r\n"

// A verdict is what the filter makes of a line.
type verdict int

const (
	skipped   verdict = iota // not a message: skipped
	passed                   // a message: passed on
	gathering                // the start of a message printed over several lines
)

// gather judges rest[:i], a line (without its newline), or the lines of a
// message printed over several lines gathered so far and the one that ends
// at i. It returns the message to pass on, less the whitespace around it,
// and the verdict.
func (f *stdoutFilter) gather(rest []byte, i int) ([]byte, verdict) {
	if !f.value.open {
		if msg, ok := f.message(rest[:i]); ok {
			return msg, passed
		}
		line := bytes.Trim(rest[:i], jsonSpace)
		if i < judgeLimit && unfinished(line) {
			f.value = valueScan{open: true}
			f.value.feed(rest[:i+1])
			f.value.fed = i + 1
			return nil, gathering
		}
		f.skipLines(rest[:i])
		return nil, skipped
	}
	// A message on its own line ends the gathering: what was gathered was
	// not the start of one after all.
	if msg, ok := f.message(rest[f.value.fed:i]); ok {
		f.skipLines(rest[:f.value.fed])
		f.value = valueScan{}
		return msg, passed
	}
	if !f.value.feed(rest[f.value.fed : i+1]) {
		f.value.fed = i + 1
		return nil, gathering
	}
	if msg, ok := f.judge(rest[:i]); ok {
		return msg, passed
	}
	return nil, skipped
}

// message returns the message that line holds, less the whitespace around
// it, counting its notifications, or false if it holds none.
func (f *stdoutFilter) message(line []byte) ([]byte, bool) {
	msg := bytes.Trim(line, jsonSpace)
	if len(msg) == 0 {
		return nil, false
	}
	ok, notes := decodeLine(msg)
	if !ok {
		return nil, false
	}
	for range notes {
		f.notes.arrived()
	}
	return msg, true
}

// skipped tells skip of line, and counts it.
func (f *stdoutFilter) skipped(line []byte) {
	f.lines.Add(1)
	f.skip(line)
}

// withHint says, for an error of a handshake with the server, what the
// filter skipped or holds, if anything: the handshake may have waited for
// an answer that the server did not write as a line of its own.
func (f *stdoutFilter) withHint(err error) error {
	if n := f.unended.Load(); n > 0 {
		return fmt.Errorf("%w (the server wrote %d bytes on stdout that no newline ended: a message must end with one)", err, n)
	}
	if n := f.lines.Load(); n > 0 {
		lines := fmt.Sprintf("%d lines on stdout that are not JSON-RPC messages", n)
		if n == 1 {
			lines = "a line on stdout that is not a JSON-RPC message"
		}
		return fmt.Errorf("%w (the server wrote %s, skipped: a message must be a line of its own)", err, lines)
	}
	return err
}

// skipLines tells skip of each line of lines that is not blank.
func (f *stdoutFilter) skipLines(lines []byte) {
	for line := range bytes.SplitSeq(lines, []byte("\n")) {
		if line = bytes.Trim(line, jsonSpace); len(line) > 0 {
			f.skipped(line)
		}
	}
}

// judge judges a line, with the lines gathered before it, if any, as one:
// it returns the message it holds, less the whitespace around it, or
// false if it holds none, whose lines are skipped.
func (f *stdoutFilter) judge(line []byte) ([]byte, bool) {
	f.value = valueScan{}
	if msg, ok := f.message(line); ok {
		return msg, true
	}
	f.skipLines(line)
	return nil, false
}

// unfinished reports whether line starts a JSON object or array that goes
// on past it.
func unfinished(line []byte) bool {
	if len(line) == 0 || line[0] != '{' && line[0] != '[' {
		return false
	}
	var syntax *json.SyntaxError
	err := json.Unmarshal(line, new(json.RawMessage))
	return errors.As(err, &syntax) && syntax.Offset == int64(len(line))
}
