package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxBatch is the most messages that a JSON-RPC batch (an array) posted to
// /mcp may hold. Only protocol revision 2025-03-26 has batches (the go-sdk
// refuses them in later ones), and a client that takes no revision from
// the handshake is served as of that one; each message of a batch costs a
// call's work, and the answer holds every result. A longer batch gets 400,
// naming the limit, before any of its messages is handled.
const MaxBatch = 16

// limitBatch refuses a POST whose body is a JSON array of more than
// MaxBatch elements. It reads such a body whole, within maxBytes (as the
// go-sdk would: zero means the go-sdk's default, negative no limit), and
// passes what it read on; any other body passes on as it comes.
func limitBatch(maxBytes int64, next http.Handler) http.Handler {
	maxBytes = bodyLimit(maxBytes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		br := bufio.NewReaderSize(r.Body, 512)
		body := readCloser{br, r.Body}
		if !startsArray(br) {
			r.Body = body
			next.ServeHTTP(w, r)
			return
		}
		r.Body = body
		if data, ok := readBody(r, maxBytes); ok {
			if n := batchLen(data); n > MaxBatch {
				http.Error(w, fmt.Sprintf("JSON-RPC batch of more than %d messages refused (the gateway's limit; batches exist only in protocol revision 2025-03-26)", MaxBatch), http.StatusBadRequest)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bodyLimit is the most of a body /mcp reads for Options.MaxRequestBytes,
// as the go-sdk takes it: zero means the go-sdk's default, negative no
// limit.
func bodyLimit(maxBytes int64) int64 {
	if maxBytes == 0 {
		return mcp.DefaultMaxRequestBodyBytes
	}
	return maxBytes
}

// readBody reads r's body, up to maxBytes (see bodyLimit), and reports
// whether that was all of it. r's body then reads again what was read, and
// the rest, if any: the go-sdk answers a body too long, or cut short, as
// it does.
func readBody(r *http.Request, maxBytes int64) (data []byte, whole bool) {
	src := io.Reader(r.Body)
	if maxBytes > 0 {
		src = io.LimitReader(src, maxBytes+1)
	}
	data, err := io.ReadAll(src)
	r.Body = readCloser{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
	return data, err == nil && (maxBytes < 0 || int64(len(data)) <= maxBytes)
}

// startsArray reports whether the first byte of br after white space is
// '[', and leaves that byte unread.
func startsArray(br *bufio.Reader) bool {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return false
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		br.UnreadByte()
		return c == '['
	}
}

// batchLen returns the number of elements of the JSON array data, counted
// up to MaxBatch+1, or 0 if data is not one.
func batchLen(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return 0
	}
	n := 0
	for dec.More() && n <= MaxBatch {
		var elem json.RawMessage
		if dec.Decode(&elem) != nil {
			return 0
		}
		n++
	}
	return n
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}
