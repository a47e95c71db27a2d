package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// linkedStream is the body of an SSE response to a request made on behalf
// of a peer. A Streamable HTTP server sends what the request causes
// (sampling and elicitation requests, log messages) on that response
// stream, but the go-sdk client merges every stream before its handlers
// see a message. linkedStream keeps the link: it adds the request's token to
// the _meta of every request and notification on the stream, as it passes,
// for the handlers to find (see peers.route). Everything else passes
// unchanged.
//
// An event is read whole before it passes, to be linked, unless a line of
// it is longer than the reader's buffer and the start of that line shows a
// response (see startsResponse): a response needs no link, and may be large
// (a tool's result), so its event passes as it comes, and none of it is
// held.
type linkedStream struct {
	rc     io.ReadCloser
	r      *bufio.Reader
	quoted json.RawMessage // the request's token, as a JSON string; nil: none to add
	notes  *noteCount
	line   []byte   // the line being read, when longer than r's buffer
	event  [][]byte // the lines of the event being read
	out    [][]byte // what is ready to be read, in order
	// through says that the rest of the line being read passes as it
	// comes: it is a response's.
	through bool
	err     error // the error to return once out is drained
}

// newLinkedStream returns rc, an SSE stream, linked to the request token
// (if not empty), counting notifications in notes.
func newLinkedStream(rc io.ReadCloser, token string, notes *noteCount) *linkedStream {
	l := &linkedStream{rc: rc, r: bufio.NewReader(rc), notes: notes}
	if token != "" {
		l.quoted, _ = json.Marshal(token)
	}
	return l
}

// isEventStream reports whether resp is an SSE stream.
func isEventStream(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

func (l *linkedStream) Read(p []byte) (int, error) {
	for len(l.out) == 0 && l.err == nil {
		l.advance()
	}
	n := 0
	for len(l.out) > 0 && n < len(p) {
		c := copy(p[n:], l.out[0])
		n += c
		if l.out[0] = l.out[0][c:]; len(l.out[0]) == 0 {
			l.out[0] = nil // a line read may be large: hold it no longer
			l.out = l.out[1:]
		}
	}
	if len(l.out) == 0 && l.err != nil {
		return n, l.err
	}
	return n, nil
}

// advance reads on: a line, or a buffer's worth of a long one. It is
// called only once out is drained, so a piece of a response's line can be
// handed out where it lies, in r's buffer, which the next read reuses.
func (l *linkedStream) advance() {
	chunk, err := l.r.ReadSlice('\n')
	long := errors.Is(err, bufio.ErrBufferFull)
	switch {
	case l.through:
		l.out = append(l.out, chunk)
		l.through = long
		if !long && err != nil {
			l.err = err
		}
		return
	case long && len(l.line) == 0 && l.startsResponse(chunk):
		l.out = append(append(l.out, l.event...), chunk)
		l.event = l.event[:0]
		l.through = true
		return
	case long:
		l.line = append(l.line, chunk...)
		return
	}
	line := append(l.line, chunk...) // a copy: chunk lies in r's buffer
	l.line = nil
	if len(line) > 0 {
		l.event = append(l.event, line)
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			l.flush()
		}
	}
	if err != nil {
		l.flush()
		l.err = err
	}
}

// startsResponse reports whether line, the start of a line of the event
// being read, is the start of the event's data, and that data the start of
// a JSON-RPC response: an object whose first member among result, error
// and method is a result or an error. The members that go before it
// (jsonrpc, id) are short, so the start of a message tells. (A message
// with a result and a method is no JSON-RPC; go-sdk takes it for a request,
// which then comes unlinked and is routed as a stdio server's are: see
// peers.route.)
func (l *linkedStream) startsResponse(line []byte) bool {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || slices.ContainsFunc(l.event, func(line []byte) bool { return bytes.HasPrefix(line, []byte("data:")) }) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return false
		}
		switch key {
		case "result", "error":
			return true
		case "method":
			return false
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
}

func (l *linkedStream) Close() error { return l.rc.Close() }

// flush makes the event read so far ready, with the link added if it is a
// message from the server that is not a response.
func (l *linkedStream) flush() {
	if len(l.event) == 0 {
		return
	}
	var data [][]byte
	for _, line := range l.event {
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			data = append(data, bytes.TrimRight(v, "\r\n"))
		}
	}
	joined := bytes.Join(data, []byte("\n"))
	if len(data) == 1 {
		joined = data[0] // the usual case: no copy
	}
	if isNote(joined) {
		l.notes.arrived()
	}
	var linked []byte
	if l.quoted != nil {
		linked = l.link(joined)
	}
	if linked == nil {
		l.out = append(l.out, l.event...)
	} else {
		for _, line := range l.event {
			if !bytes.HasPrefix(line, []byte("data:")) && len(bytes.TrimRight(line, "\r\n")) > 0 {
				l.out = append(l.out, line)
			}
		}
		l.out = append(l.out, []byte("data: "), linked, []byte("\n\n"))
	}
	l.event = l.event[:0]
}

// link returns the message data with the link added to its _meta, or nil
// if data is not a request or notification that can carry it.
func (l *linkedStream) link(data []byte) []byte {
	if !bytes.Contains(data, []byte(`"method"`)) {
		return nil // a response, or not JSON-RPC: the client will say so
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return nil
	}
	params := map[string]json.RawMessage{}
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, &params); err != nil {
			return nil // not an object: nothing to carry it
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return nil
		}
	}
	meta[linkKey] = l.quoted
	var err1, err2 error
	params["_meta"], err1 = json.Marshal(meta)
	req.Params, err2 = json.Marshal(params)
	out, err3 := jsonrpc.EncodeMessage(req)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil
	}
	return out
}

// isNote reports whether data, one message, is a notification that a
// handler forwards to a peer (see forwarded).
func isNote(data []byte) bool {
	if !bytes.Contains(data, []byte("notifications/")) {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	return ok && !req.ID.IsValid() && forwarded(req.Method)
}

// forwarded reports whether a notification of method is one that a handler
// forwards to a peer: a log message or progress.
func forwarded(method string) bool {
	return method == "notifications/message" || method == "notifications/progress"
}
