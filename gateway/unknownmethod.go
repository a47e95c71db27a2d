package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// methodNotFound answers a request for a method the gateway does not serve
// as JSON-RPC asks, and as the gateway does over stdio: with error -32601
// naming the method (HTTP 200), or, for a notification, with nothing (202
// Accepted). The go-sdk's Streamable HTTP handler refuses such a request
// before any MCP handler sees it, with 400 and a line of plain text, which
// a client can only report as a failure of the transport. (It answers
// clients of revision 2026-07-28 and later with -32601 and 404 itself:
// those answers pass unchanged.)
//
// The refusal is recognized by the go-sdk's words for it, which name the
// method; the request is decoded only then, from the first
// maxRequestRecord bytes of its body, recorded as the go-sdk reads it.
func methodNotFound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body := &recordedBody{ReadCloser: r.Body}
		r2 := *r // as http.MaxBytesHandler does
		r2.Body = body
		rw := &refusalWriter{ResponseWriter: w}
		next.ServeHTTP(rw, &r2)
		rw.finish(body)
	})
}

// maxRequestRecord bounds what methodNotFound records of a request's body:
// an envelope whose method and id come later is refused as the go-sdk
// refuses it.
const maxRequestRecord = 64 << 10

// recordedBody records the first maxRequestRecord bytes read from a body.
type recordedBody struct {
	io.ReadCloser
	head      []byte
	truncated bool
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	keep := min(n, maxRequestRecord-len(b.head))
	b.head = append(b.head, p[:keep]...)
	b.truncated = b.truncated || keep < n
	return n, err
}

// unknownMethod returns the request recorded in body if the go-sdk refused
// it, with refusal, for its method.
func (b *recordedBody) unknownMethod(refusal string) (*jsonrpc.Request, bool) {
	if b.truncated {
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(b.head)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return nil, false
	}
	return req, strings.HasSuffix(strings.TrimSpace(refusal), fmt.Sprintf("%q unsupported", req.Method))
}

// refusalWriter holds back a 400 answer until the handler has returned, so
// that methodNotFound can answer instead. Any other answer goes through as
// it is written.
type refusalWriter struct {
	http.ResponseWriter
	held    bool         // a 400 is held back
	started bool         // an answer went through
	refusal bytes.Buffer // the held answer's body
}

// maxRefusal bounds what is held of a refusal's body; the go-sdk's are a
// line.
const maxRefusal = 4 << 10

func (w *refusalWriter) WriteHeader(code int) {
	if !w.started && !w.held && code == http.StatusBadRequest {
		w.held = true
		return
	}
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(p []byte) (int, error) {
	if w.held {
		w.refusal.Write(p[:min(len(p), max(0, maxRefusal-w.refusal.Len()))])
		return len(p), nil
	}
	w.started = true
	return w.ResponseWriter.Write(p)
}

// Flush flushes what went through; a refusal held back waits for finish.
func (w *refusalWriter) Flush() {
	if !w.held {
		http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the answer held back, if any: the JSON-RPC answer for an
// unknown method, or else the refusal as it was.
func (w *refusalWriter) finish(body *recordedBody) {
	if !w.held {
		return
	}
	if req, ok := body.unknownMethod(w.refusal.String()); ok {
		w.Header().Del("Content-Type")
		if !req.IsCall() {
			w.ResponseWriter.WriteHeader(http.StatusAccepted) // a notification is never answered
			return
		}
		answer := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", req.Method)}}
		if data, err := jsonrpc.EncodeMessage(answer); err == nil {
			w.Header().Set("Content-Type", "application/json")
			w.ResponseWriter.WriteHeader(http.StatusOK)
			w.ResponseWriter.Write(data)
			return
		}
	}
	w.ResponseWriter.WriteHeader(http.StatusBadRequest)
	w.ResponseWriter.Write(w.refusal.Bytes())
}
