package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// BreakError says where an audit log's chain breaks: at Line (1-based),
// and why.
type BreakError struct {
	Line   int
	Reason string
}

func (e *BreakError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// verifyLine is what Verify reads of a line.
type verifyLine struct {
	hash string
	seq  int64
	prev string
}

// Verify reads an audit log from r and checks its chain: that the first
// line's prev is [Genesis] and every other line's the hash of the line
// before it. It returns the number of lines, and a *BreakError naming the
// first line that breaks the chain (edited, inserted, deleted, not JSON,
// truncated, or longer than [MaxLine]), or the read error.
func Verify(r io.Reader) (lines int, _ error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var before []verifyLine // the last two good lines, the newest last
	n := 0
	next := func() (verifyLine, bool, error) {
		b, err := readLine(br)
		if err == io.EOF {
			return verifyLine{}, false, nil
		}
		n++
		if err != nil {
			return verifyLine{}, false, lineErr(n, err)
		}
		return parseLine(n, b)
	}
	for {
		cur, ok, err := next()
		if err != nil || !ok {
			return n - btoi(err != nil), err
		}
		var want string
		switch len(before) {
		case 0:
			want = Genesis
		default:
			want = before[len(before)-1].hash
		}
		if cur.prev == want {
			before = append(before[max(len(before)-1, 0):], cur)
			continue
		}
		return n, diagnose(n, cur, before, next)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// diagnose says why line n, cur, does not continue the lines before it;
// next reads the line after it.
func diagnose(n int, cur verifyLine, before []verifyLine, next func() (verifyLine, bool, error)) error {
	if len(before) == 0 {
		return &BreakError{n, "its prev is not the genesis value: lines were deleted from the start, or the line was edited"}
	}
	last := before[len(before)-1]
	// The line after this one vouches for the one before it: this one was
	// inserted. (Checked first: an inserted line may copy its
	// neighbour's prev.)
	if after, ok, err := next(); err == nil && ok && after.prev == last.hash {
		return &BreakError{n, fmt.Sprintf("inserted: line %d's prev is the hash of line %d", n+1, n-1)}
	}
	// This one continues from the line before the last: the last was
	// inserted.
	if len(before) == 2 && cur.prev == before[0].hash {
		return &BreakError{n - 1, fmt.Sprintf("inserted: line %d's prev is the hash of line %d", n, n-2)}
	}
	switch {
	case cur.seq > last.seq+1:
		return &BreakError{n, fmt.Sprintf("deleted: %d line(s) are missing before it (seq jumps from %d to %d)", cur.seq-last.seq-1, last.seq, cur.seq)}
	case cur.seq == last.seq+1:
		return &BreakError{n - 1, fmt.Sprintf("edited: its hash is not line %d's prev", n)}
	}
	return &BreakError{n, fmt.Sprintf("its prev is not the hash of line %d: a line was edited, inserted or deleted", n-1)}
}

// ErrLineTooLong is a line longer than [MaxLine].
var ErrLineTooLong = fmt.Errorf("longer than %d bytes (MaxLine)", MaxLine)

var errTruncated = errors.New("truncated: no newline at its end")

func lineErr(n int, err error) error {
	if err == ErrLineTooLong || err == errTruncated {
		return &BreakError{n, err.Error()}
	}
	return fmt.Errorf("audit verify: line %d: %w", n, err)
}

// readLine reads a line of at most MaxLine bytes, without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(b)+len(chunk) > MaxLine+1 {
			return nil, ErrLineTooLong
		}
		b = append(b, chunk...)
		switch {
		case err == nil:
			return b[:len(b)-1], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(b) > 0:
			return nil, errTruncated
		default:
			return nil, err
		}
	}
}

func parseLine(n int, b []byte) (verifyLine, bool, error) {
	var v struct {
		Seq  int64
		Prev *string
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return verifyLine{}, false, &BreakError{n, "not JSON"}
	}
	if v.Prev == nil {
		return verifyLine{}, false, &BreakError{n, "no prev"}
	}
	return verifyLine{hash: hash(b), seq: v.Seq, prev: *v.Prev}, true, nil
}
