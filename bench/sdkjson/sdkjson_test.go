package sdkjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// message is a tools/call request with a 1 KiB argument, as a client
// sends it.
var message = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
	strings.Repeat("x", 1024) + `"},"_meta":{"progressToken":7}}}`)

// wire is go-sdk's internal/jsonrpc2 wireDecode, the first thing every
// message is decoded into.
type wire struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	} `json:"error,omitempty"`
}

// asSDK decodes as go-sdk v1.8.0's internal/json.Unmarshal does: a
// Decoder over a bytes.Reader.
func asSDK(data []byte, v any) error {
	dec := segjson.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v)
}

// proposed is the one-line change: parse the bytes in place, with the same
// flag.
func proposed(data []byte, v any) error {
	_, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	return err
}

// TestProposedDecodesTheSame: the change decodes what go-sdk decodes, and
// refuses what it refuses.
func TestProposedDecodesTheSame(t *testing.T) {
	for _, data := range [][]byte{
		message,
		[]byte(`{"jsonrpc":"2.0","id":"a","result":{"content":[]}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`),
		[]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`),
		[]byte(`{"JSONRPC":"2.0","Method":"x"}`), // case matters, as in go-sdk
		[]byte(`{"jsonrpc":`),
	} {
		var a, b wire
		errA, errB := asSDK(data, &a), proposed(data, &b)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Errorf("%s:\ngo-sdk   %+v, %v\nproposed %+v, %v", data, a, errA, b, errB)
		}
	}
}

// BenchmarkDecodeMessage is go-sdk's public entry point: one message,
// decoded twice (the envelope, then the method name).
func BenchmarkDecodeMessage(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonrpc.DecodeMessage(message); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshal compares go-sdk's way of decoding the envelope with
// the proposed one.
func BenchmarkUnmarshal(b *testing.B) {
	for _, bc := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"sdk", asSDK}, {"proposed", proposed}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var w wire
				if err := bc.decode(message, &w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
