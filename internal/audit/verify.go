package audit

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// BreakError says where an audit log's chain breaks: at Line (1-based) of
// File (the name given to [VerifyFiles]; "" for [Verify]), and why. Line is
// 0 when the break is at no line: an [Anchor] that the lines do not hold.
type BreakError struct {
	File   string
	Line   int
	Reason string
}

func (e *BreakError) Error() string {
	switch {
	case e.Line == 0 && e.File == "":
		return e.Reason
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Reason)
	case e.File == "":
		return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	}
	return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Reason)
}

// Source is one file of a log, for [VerifyFiles]: its name, which errors
// give, and its content.
type Source struct {
	Name string
	R    io.Reader
}

// Summary describes the chain that a verify read.
type Summary struct {
	// Lines is how many lines were read.
	Lines int
	// FirstSeq and Start are the first line's seq and prev: [Genesis] for
	// the first line of a log, else the hash of the line before it, in a
	// file not given (rotated).
	FirstSeq int64
	Start    string
	// Last is the seq and hash of the last line: an anchor to keep
	// elsewhere, to check later that no line up to it was edited or
	// deleted. Zero when there are no lines.
	Last Anchor
}

// Anchor names a line of a log by its seq and hash, written "SEQ:HASH".
type Anchor struct {
	Seq  int64  // 0: unknown (an anchor given as HASH alone)
	Hash string // hex SHA-256 of the line, without its newline
}

func (a Anchor) String() string {
	if a.Seq == 0 {
		return a.Hash // given without its seq
	}
	return fmt.Sprintf("%d:%s", a.Seq, a.Hash)
}

// ErrBadAnchor means an anchor is neither SEQ:HASH nor HASH.
var ErrBadAnchor = errors.New("want SEQ:HASH or HASH, HASH 64 hex digits, as audit verify prints the last line")

// ParseAnchor reads an anchor written "SEQ:HASH" or "HASH".
func ParseAnchor(s string) (Anchor, error) {
	var a Anchor
	h := s
	if seq, rest, ok := strings.Cut(s, ":"); ok {
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil || n < 1 {
			return Anchor{}, fmt.Errorf("anchor %q: %w", s, ErrBadAnchor)
		}
		a.Seq, h = n, rest
	}
	if _, err := hex.DecodeString(h); err != nil || len(h) != 64 {
		return Anchor{}, fmt.Errorf("anchor %q: %w", s, ErrBadAnchor)
	}
	a.Hash = strings.ToLower(h)
	return a, nil
}

// verifyLine is what a verify reads of a line.
type verifyLine struct {
	hash      string
	seq       int64
	prev      string
	continues bool
	at        pos
}

// pos is where a line is: its file's name and its number there.
type pos struct {
	file string
	line int
}

// ref names the line at p for a break at the line at, in at's file.
func (p pos) ref(at pos) string {
	if p.file == at.file {
		return fmt.Sprintf("line %d", p.line)
	}
	return fmt.Sprintf("%s line %d", p.file, p.line)
}

func (p pos) brk(reason string) *BreakError { return &BreakError{p.file, p.line, reason} }

// Verify reads an audit log from r and checks its chain: that the first
// line's prev is [Genesis], or that it continues a file rotated before it
// (its "continues" is true), and every other line's prev the hash of the
// line before it. It returns the number of lines, and a *BreakError naming
// the first line that breaks the chain (edited, inserted, deleted, not
// JSON, truncated, or longer than [MaxLine]), or the read error.
func Verify(r io.Reader) (lines int, _ error) {
	sum, err := VerifyFiles([]Source{{R: r}}, nil)
	if be := (*BreakError)(nil); errors.As(err, &be) {
		return be.Line, err
	}
	return sum.Lines, err
}

// VerifyFiles checks the chain of a log kept in several files, oldest
// first (such as audit.jsonl.2, audit.jsonl.1, audit.jsonl): each file's
// chain, as [Verify] does, and that the first line of each file continues
// the last line of the file before it. The first file may be a rotated
// one, whose first line continues a file not given: the Summary says where
// it starts. If anchor is not nil, the lines must hold it (or continue
// it): otherwise the lines up to it were edited or deleted, and the error
// says so. It returns a *BreakError for the first break, or a read error.
func VerifyFiles(files []Source, anchor *Anchor) (Summary, error) {
	v := &verifier{files: files}
	var sum Summary
	var before []verifyLine // the last two good lines, the newest last
	found := false
	for {
		cur, ok, err := v.next()
		if err != nil {
			return sum, err
		}
		if !ok {
			break
		}
		if len(before) == 0 {
			if cur.prev != Genesis && !cur.continues {
				return sum, cur.at.brk("its prev is not the genesis value, and it does not continue a rotated file: lines were deleted from the start, or the line was edited")
			}
			sum.FirstSeq, sum.Start = cur.seq, cur.prev
			found = anchor != nil && cur.prev == anchor.Hash && (anchor.Seq == 0 || anchor.Seq == cur.seq-1)
		} else if last := before[len(before)-1]; cur.prev != last.hash {
			if cur.at.line == 1 && cur.prev == Genesis {
				return sum, cur.at.brk(fmt.Sprintf("it starts a new chain (its prev is the genesis value): it does not continue %s (seq %d)", last.at.ref(cur.at), last.seq))
			}
			return sum, diagnose(cur, before, v.next)
		}
		before = append(before[max(len(before)-1, 0):], cur)
		sum.Lines++
		sum.Last = Anchor{cur.seq, cur.hash}
		if anchor != nil && !found {
			switch {
			case cur.hash == anchor.Hash:
				found = true
			case anchor.Seq != 0 && cur.seq == anchor.Seq:
				return sum, cur.at.brk(fmt.Sprintf("edited or replaced: its seq is the anchor's, %d, but its hash is not the anchor's: the lines up to it were edited, or deleted and written anew", anchor.Seq))
			}
		}
	}
	if anchor != nil && !found {
		at := pos{}
		if len(files) > 0 {
			at.file = files[len(files)-1].Name
		}
		switch {
		case sum.Lines == 0:
			return sum, at.brk(fmt.Sprintf("no lines, so not the anchor %s", anchor))
		case anchor.Seq != 0 && anchor.Seq > sum.Last.Seq:
			return sum, at.brk(fmt.Sprintf("deleted: the chain ends at seq %d, before the anchor's seq %d: its last lines were deleted", sum.Last.Seq, anchor.Seq))
		case anchor.Seq != 0 && anchor.Seq < sum.FirstSeq-1:
			return sum, at.brk(fmt.Sprintf("the anchor's seq %d is before the first line given (seq %d): give the files rotated before it", anchor.Seq, sum.FirstSeq))
		}
		return sum, at.brk(fmt.Sprintf("no line is the anchor %s: the lines up to it were edited or deleted, or are in files not given", anchor))
	}
	return sum, nil
}

// verifier reads the lines of files, one after the other.
type verifier struct {
	files []Source
	br    *bufio.Reader
	at    pos // of the line last read
}

// next reads the next line; false after the last.
func (v *verifier) next() (verifyLine, bool, error) {
	for {
		if v.br == nil {
			if len(v.files) == 0 {
				return verifyLine{}, false, nil
			}
			v.br = bufio.NewReaderSize(v.files[0].R, 64<<10)
			v.at = pos{v.files[0].Name, 0}
			v.files = v.files[1:]
		}
		b, err := readLine(v.br)
		if err == io.EOF {
			v.br = nil
			continue
		}
		v.at.line++
		if err != nil {
			return verifyLine{}, false, lineErr(v.at, err)
		}
		return parseLine(v.at, b)
	}
}

// diagnose says why cur does not continue the lines before it; next reads
// the line after it.
func diagnose(cur verifyLine, before []verifyLine, next func() (verifyLine, bool, error)) error {
	last := before[len(before)-1]
	// The line after this one vouches for the one before it: this one was
	// inserted. (Checked first: an inserted line may copy its
	// neighbour's prev.)
	if after, ok, err := next(); err == nil && ok && after.prev == last.hash {
		return cur.at.brk(fmt.Sprintf("inserted: %s's prev is the hash of %s", after.at.ref(cur.at), last.at.ref(cur.at)))
	}
	// This one continues from the line before the last: the last was
	// inserted.
	if len(before) == 2 && cur.prev == before[0].hash {
		return last.at.brk(fmt.Sprintf("inserted: %s's prev is the hash of %s", cur.at.ref(last.at), before[0].at.ref(last.at)))
	}
	// Between two files, the files may be out of order, or one missing.
	hint := ""
	if cur.at.file != last.at.file {
		hint = " (or the files are out of order, or one is missing: give them oldest first, as audit.jsonl.2 audit.jsonl.1 audit.jsonl)"
	}
	switch {
	case cur.seq > last.seq+1:
		return cur.at.brk(fmt.Sprintf("deleted: %d line(s) are missing before it (seq jumps from %d to %d)%s", cur.seq-last.seq-1, last.seq, cur.seq, hint))
	case cur.seq == last.seq+1:
		return last.at.brk(fmt.Sprintf("edited: its hash is not %s's prev", cur.at.ref(last.at)))
	}
	return cur.at.brk(fmt.Sprintf("its prev is not the hash of %s: a line was edited, inserted or deleted%s", last.at.ref(cur.at), hint))
}

// ErrLineTooLong is a line longer than [MaxLine].
var ErrLineTooLong = fmt.Errorf("longer than %d bytes (MaxLine)", MaxLine)

var errTruncated = errors.New("truncated: no newline at its end")

func lineErr(at pos, err error) error {
	if err == ErrLineTooLong || err == errTruncated {
		return at.brk(err.Error())
	}
	if at.file != "" {
		return fmt.Errorf("audit verify: %s line %d: %w", at.file, at.line, err)
	}
	return fmt.Errorf("audit verify: line %d: %w", at.line, err)
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

func parseLine(at pos, b []byte) (verifyLine, bool, error) {
	var v struct {
		Seq       int64
		Prev      *string
		Continues bool
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return verifyLine{}, false, at.brk("not JSON")
	}
	if v.Prev == nil {
		return verifyLine{}, false, at.brk("no prev")
	}
	return verifyLine{hash: hash(b), seq: v.Seq, prev: *v.Prev, continues: v.Continues, at: at}, true, nil
}
