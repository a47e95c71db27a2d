package upstream

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkTakes is the oracle: whether go-sdk's own stdio transport reads line
// as messages, and how many of them are notifications a handler forwards.
func sdkTakes(t *testing.T, line []byte) (ok bool, notes int) {
	conn, err := (&mcp.IOTransport{Reader: io.NopCloser(bytes.NewReader(append(line, '\n'))), Writer: nopWriteCloser{}}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := 0; ; i++ {
		msg, err := conn.Read(context.Background())
		if err != nil {
			return i > 0 && err == io.EOF, notes // EOF: every message read
		}
		if req, ok := msg.(*jsonrpc.Request); ok && !req.ID.IsValid() && forwarded(req.Method) {
			notes++
		}
	}
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// FuzzDecodeLine: decodeLine takes a line exactly when go-sdk's stdio
// transport does, and counts the same notifications. Its seeds run with
// every go test, and catch a go-sdk release that decodes differently.
func FuzzDecodeLine(f *testing.F) {
	deep := func(n int) string {
		return `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	for _, seed := range []string{
		call, result, reversed, logNote,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"notifications/message"}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"error":"x"}`,
		`{"jsonrpc":"2.0","id":true,"result":1}`,
		`{"jsonrpc":"2.0","id":[1],"result":1}`,
		`{"jsonrpc":"2.0","id":1e400,"result":1}`,
		`{"jsonrpc":"2.0","id":1.5,"result":1}`,
		`{"jsonrpc":"2.0","method":null}`,
		`{"jsonrpc":"2.0","method":1}`,
		`{"jsonrpc":"2.0","method":""}`,
		`{"JSONRPC":"2.0","id":1,"result":1}`,
		`{"jsonrpc":"2.0","ID":1,"result":1}`,
		`{"jsonrpc":"1.0","id":1,"result":1}`,
		`{"jsonrpc":2,"id":1,"result":1}`,
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"result":1}`,
		`{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"result":1}`,
		`{"jsonrpc":"2.0","id":1,"result":"\u00e9\ud800"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\x01\"}",
		`{"jsonrpc":"2.0","id":1,"result":1} `,
		`{"jsonrpc":"2.0","id":1,"result":1}x`,
		`{"jsonrpc":"2.0","id":1,"result":1}{}`,
		`{"level":30,"msg":"started"}`,
		`[]`, `[1]`, `[` + result + `]`, `[` + result + `,` + logNote + `,` + logNote + `]`, `[` + result + `,{}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1.5,"method":"b"}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":"1","method":"b"}]`,
		`[` + result + `,` + result + `]`,
		deep(maxDepth - 1), deep(maxDepth), deep(maxDepth + 1),
		`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("[", maxDepth+1) + `"}`,
		`{"jsonrpc":"2.0","id":1,"result":"\"` + strings.Repeat("[", maxDepth+1) + `"}`,
		`42`, `"text"`, `null`, `{`, `{"a":}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.Trim(line, jsonSpace)
		if len(line) == 0 || bytes.IndexByte(line, '\n') >= 0 {
			return // not a line the filter judges
		}
		wantOK, wantNotes := sdkTakes(t, line)
		ok, notes := decodeLine(line)
		if ok != wantOK || ok && notes != wantNotes {
			t.Errorf("decodeLine(%q) = %v, %d notes; go-sdk: %v, %d", line, ok, notes, wantOK, wantNotes)
		}
	})
}
