package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// BenchmarkCallTool measures one tools/call of an echo tool on an in-memory
// server: "raw" through a go-sdk ClientSession, the baseline, and
// "upstream" through Upstream.CallTool, with the same protocol version and
// client capabilities. It is the root package's BenchmarkCallTool without
// the manager: what one Upstream adds to a call.
func BenchmarkCallTool(b *testing.B) {
	args := map[string]any{"text": "hello"}

	b.Run("raw", func(b *testing.B) {
		srv := mcptest.NewServer(mcptest.Script{})
		defer srv.Close()
		cs := rawSession(b, benchClient(nil), srv)
		defer cs.Close()
		for b.Loop() {
			if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("upstream", func(b *testing.B) {
		srv := mcptest.NewServer(mcptest.Script{})
		defer srv.Close()
		u := New(inMemoryServer, dialing(srv))
		defer u.Close(time.Time{})
		if err := u.Connect(b.Context()); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := callTool(b.Context(), u, "echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRestartRecovery measures how long an HTTP server's restart costs
// a caller. "fresh" is the baseline: a go-sdk client opens a new session
// and makes one call. "recovery" is the subject: an upstream whose server
// has just forgotten every session (as a restart behind its address does)
// makes one call, which meets the stale session, opens a new one, and
// replays. BENCHMARKS.md reports recovery/fresh.
func BenchmarkRestartRecovery(b *testing.B) {
	srv := mcptest.NewServer(mcptest.Script{LegacyOnly: true})
	hs, err := mcptest.StartHTTP(srv)
	if err != nil {
		b.Fatal(err)
	}
	defer hs.Close()
	defer srv.Close()
	args := map[string]any{"text": "hello"}

	b.Run("fresh", func(b *testing.B) {
		transport := &http.Transport{}
		defer transport.CloseIdleConnections()
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		for b.Loop() {
			cs, err := client.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: transport}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cs.Close()
			b.StartTimer()
		}
	})

	b.Run("recovery", func(b *testing.B) {
		for b.Loop() {
			// A new upstream each time: restarts this frequent would trip
			// the breaker, as they should.
			b.StopTimer()
			u := New(config.Server{Name: "web", URL: hs.URL}, nil)
			if err := u.Connect(b.Context()); err != nil {
				b.Fatal(err)
			}
			srv.Restart()
			b.StartTimer()
			if _, err := callTool(b.Context(), u, "echo", args); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			u.Close(time.Time{})
			b.StartTimer()
		}
	})
}

// BenchmarkIdleMemory measures the heap held by each idle, connected
// session: "raw" go-sdk ClientSessions, the baseline, against "upstream"
// Upstreams, on in-memory mcptest servers (whose side both include).
// BENCHMARKS.md reports upstream/raw of the bytes/conn metric.
func BenchmarkIdleMemory(b *testing.B) {
	const n = 500
	measure := func(b *testing.B, open func(*mcptest.Server) func()) {
		for b.Loop() {
			servers := make([]*mcptest.Server, n)
			for i := range servers {
				servers[i] = mcptest.NewServer(mcptest.Script{})
			}
			before := heap()
			closers := make([]func(), n)
			for i, srv := range servers {
				closers[i] = open(srv)
			}
			after := heap()
			b.ReportMetric(float64(after-before)/n, "bytes/conn")
			for i, close := range closers {
				close()
				servers[i].Close()
			}
		}
	}
	b.Run("raw", func(b *testing.B) {
		client := benchClient(nil)
		measure(b, func(srv *mcptest.Server) func() {
			cs := rawSession(b, client, srv)
			if _, err := cs.ListTools(b.Context(), nil); err != nil {
				b.Fatal(err)
			}
			return func() { cs.Close() }
		})
	})
	b.Run("upstream", func(b *testing.B) {
		measure(b, func(srv *mcptest.Server) func() {
			u := New(inMemoryServer, dialing(srv))
			if err := u.Connect(b.Context()); err != nil {
				b.Fatal(err)
			}
			return func() { u.Close(time.Time{}) }
		})
	})
}

// BenchmarkNotificationStorm counts the tools/list fetches that a burst of
// 1,000 notifications/tools/list_changed causes, until the client has the
// list as of the last notification. "naive" is the baseline: a go-sdk
// client that fetches on every notification. "upstream" is the subject,
// which coalesces. BENCHMARKS.md reports upstream/naive of fetches/storm.
func BenchmarkNotificationStorm(b *testing.B) {
	const storm = 1000
	// measure runs the storms: expect is told before each, settled waits
	// until the client has caught up with it.
	measure := func(b *testing.B, srv *mcptest.Server, expect, settled func()) {
		fetches := 0
		for b.Loop() {
			before := srv.Counts().ListTools
			expect()
			for range storm {
				srv.NotifyToolsChanged()
			}
			settled()
			fetches += srv.Counts().ListTools - before
		}
		b.ReportMetric(float64(fetches)/float64(b.N), "fetches/storm")
	}

	b.Run("naive", func(b *testing.B) {
		srv := mcptest.NewServer(mcptest.Script{})
		defer srv.Close()
		var fetching sync.WaitGroup
		heard := make(chan struct{}, storm)
		var cs *mcp.ClientSession
		client := benchClient(func(ctx context.Context, _ *mcp.ToolListChangedRequest) {
			// The handler runs on the receive loop, which must stay free
			// to deliver the list's answer.
			fetching.Go(func() { _, _ = cs.ListTools(context.Background(), nil) })
			heard <- struct{}{}
		})
		cs = rawSession(b, client, srv)
		defer cs.Close()
		measure(b, srv, func() {}, func() {
			for range storm {
				<-heard
			}
			fetching.Wait()
		})
	})

	b.Run("upstream", func(b *testing.B) {
		srv := mcptest.NewServer(mcptest.Script{})
		defer srv.Close()
		var u *Upstream
		var target atomic.Uint64
		caughtUp := make(chan struct{}, 1)
		opts := dialing(srv)
		opts.OnEvent = func(ev Event) {
			// A list is recorded as fetched before its event goes out.
			if ev.Kind == EventList && ev.List == Tools && u.lists.fetched[Tools].Load() == target.Load() {
				signal(caughtUp)
			}
		}
		u = New(inMemoryServer, opts)
		if err := u.Connect(b.Context()); err != nil {
			b.Fatal(err)
		}
		defer u.Close(time.Time{})
		target.Store(u.lists.listGen[Tools].Load())
		measure(b, srv, func() { target.Add(storm) }, func() { <-caughtUp })
	})
}

// inMemoryServer is the config of a server that dialing connects to.
var inMemoryServer = config.Server{Name: "m", Command: "in-memory"}

// dialing returns options that connect an upstream to srv, in memory.
func dialing(srv *mcptest.Server) *Options {
	return &Options{Dial: func(ctx context.Context, _ config.Server) (mcp.Transport, error) { return srv.ConnectInMemory(ctx) }}
}

// benchClient returns the go-sdk client of a baseline, which offers
// nothing, with listChanged, if not nil, as its handler of tools/list
// changes.
func benchClient(listChanged func(context.Context, *mcp.ToolListChangedRequest)) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{}, ToolListChangedHandler: listChanged,
	})
}

// rawSession connects client to srv, in memory. An in-memory server is
// configured as stdio, which gets the legacy handshake: a baseline must
// speak the same era.
func rawSession(b *testing.B, client *mcp.Client, srv *mcptest.Server) *mcp.ClientSession {
	transport, err := srv.ConnectInMemory(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	cs, err := client.Connect(b.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// heap returns the bytes in use after a full collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkLinkedStream reads one call's answer, a 1 KiB result on an SSE
// stream, through the link that the gateway puts on the response stream
// of every call it makes over Streamable HTTP on behalf of a client.
func BenchmarkLinkedStream(b *testing.B) {
	event := sseEvent(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1024) + `"}]}}`)
	buf := make([]byte, 4096)
	for b.Loop() {
		l := newLinkedStream(io.NopCloser(strings.NewReader(event)), "sb-1", &noteCount{})
		if _, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{l}, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdoutFilter measures a tools/call over a stdio pipe, with the
// response read by go-sdk's stdio transport straight from the pipe ("raw",
// the baseline) or through the stdoutFilter ("filtered"), for three sizes
// of response: a small echo, 32 KiB (judged whole) and 1 MiB (passed on as
// it streams). The server is in process, on os.Pipe, as a child would be.
// BENCHMARKS.md reports filtered/raw for each size.
func BenchmarkStdoutFilter(b *testing.B) {
	readers := []struct {
		name string
		wrap func(io.ReadCloser) io.ReadCloser
	}{
		{"raw", func(r io.ReadCloser) io.ReadCloser { return r }},
		{"filtered", func(r io.ReadCloser) io.ReadCloser {
			return newStdoutFilter(r, &noteCount{}, func([]byte) { b.Fatal("a line was skipped") })
		}},
	}
	for _, size := range []struct {
		name  string
		tool  string
		bytes int
	}{{"echo", "echo", 0}, {"32KiB", "big", 32 << 10}, {"1MiB", "big", 1 << 20}} {
		for _, reader := range readers {
			b.Run(size.name+"/"+reader.name, func(b *testing.B) {
				cs := pipedSession(b, mcptest.Script{ResponseBytes: size.bytes}, reader.wrap)
				params := &mcp.CallToolParams{Name: size.tool, Arguments: map[string]any{"text": "hello"}}
				for b.Loop() {
					if _, err := cs.CallTool(b.Context(), params); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// pipedSession serves script in process on a pair of os.Pipes, and returns
// a client session that reads the server's output through wrap.
func pipedSession(b *testing.B, script mcptest.Script, wrap func(io.ReadCloser) io.ReadCloser) *mcp.ClientSession {
	b.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- mcptest.ServeStdio(context.Background(), script, inR, outW) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(b.Context(), &mcp.IOTransport{Reader: wrap(outR), Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		if err := <-served; err != nil {
			b.Error(err)
		}
	})
	return cs
}

// BenchmarkStdoutFilterLines measures the filter alone: the time it takes
// per line (ns/line) of a server's output, read as go-sdk's transport reads
// it, for responses of 100 bytes and 32 KiB. Compare with
// BenchmarkStdoutFilter's time per call.
func BenchmarkStdoutFilterLines(b *testing.B) {
	const lines = 100
	for _, size := range []int{100, 32 << 10} {
		line := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", size) + `"}],"isError":false}}` + "\n")
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			stream := bytes.Repeat(line, lines)
			p := make([]byte, 64<<10)
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			var r bytes.Reader
			for b.Loop() {
				r.Reset(stream)
				f := newStdoutFilter(io.NopCloser(&r), &noteCount{}, func([]byte) { b.Fatal("a line was skipped") })
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, p)
				if err != nil || n != int64(len(stream)) {
					b.Fatalf("read %d bytes, %v", n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
		})
	}
}
