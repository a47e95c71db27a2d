package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"

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
type linkedStream struct {
	rc     io.ReadCloser
	r      *bufio.Reader
	quoted json.RawMessage // the request's token, as a JSON string
	event  [][]byte        // the lines of the event being read
	out    []byte          // bytes ready to be read
	err    error           // the error to return once out is drained
}

func newLinkedStream(rc io.ReadCloser, token string) *linkedStream {
	quoted, _ := json.Marshal(token)
	return &linkedStream{rc: rc, r: bufio.NewReader(rc), quoted: quoted}
}

// isEventStream reports whether resp is an SSE stream.
func isEventStream(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

func (l *linkedStream) Read(p []byte) (int, error) {
	for len(l.out) == 0 && l.err == nil {
		line, err := l.r.ReadBytes('\n')
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
	n := copy(p, l.out)
	l.out = l.out[n:]
	if len(l.out) == 0 && l.err != nil {
		return n, l.err
	}
	return n, nil
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
	linked := l.link(bytes.Join(data, []byte("\n")))
	if linked == nil {
		for _, line := range l.event {
			l.out = append(l.out, line...)
		}
	} else {
		for _, line := range l.event {
			if !bytes.HasPrefix(line, []byte("data:")) && len(bytes.TrimRight(line, "\r\n")) > 0 {
				l.out = append(l.out, line...)
			}
		}
		l.out = append(l.out, "data: "...)
		l.out = append(l.out, linked...)
		l.out = append(l.out, "\n\n"...)
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
