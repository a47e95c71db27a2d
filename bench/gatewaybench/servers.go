package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoArgs is the echo tool's input.
type echoArgs struct {
	Text string `json:"text"`
}

// bigArgs is the big tool's input.
type bigArgs struct {
	Bytes int `json:"bytes"`
}

// upstreamTools are the upstream's tools, which the minimal proxy forwards.
var upstreamTools = []string{"echo", "big"}

// newEchoServer is the upstream of every setup: go-sdk's server with typed
// tools: echo answers its text, big a text of its number of bytes (-big).
func newEchoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "answers its text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "answers a text of its number of bytes"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.Bytes)}}}, nil, nil
		})
	return s
}

// serveUpstream runs the echo server on stdio, or over Streamable HTTP on
// listen, until ctx ends.
func serveUpstream(ctx context.Context, listen string, stdio bool) error {
	s := newEchoServer()
	if stdio {
		return s.Run(ctx, &mcp.StdioTransport{})
	}
	return serveHTTP(ctx, listen, s)
}

// serveProxy runs the minimal go-sdk proxy: server tools that forward their
// raw arguments to one shared client session, and nothing else. It is
// the limit of a gateway on go-sdk with the gateway's own code costing
// nothing.
func serveProxy(ctx context.Context, listen, upstreamURL string, upstreamCommand []string) error {
	var transport mcp.Transport
	if upstreamURL != "" {
		transport = &mcp.StreamableClientTransport{Endpoint: upstreamURL, HTTPClient: &http.Client{Transport: deepPool()}}
	} else {
		transport = &mcp.CommandTransport{Command: exec.Command(upstreamCommand[0], upstreamCommand[1:]...)}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "proxy", Version: "1"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return fmt.Errorf("proxy: connect to the upstream: %w", err)
	}
	defer cs.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "proxy", Version: "1"}, nil)
	for _, name := range upstreamTools {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments})
			})
	}
	return serveHTTP(ctx, listen, s)
}

// deepPool is an HTTP transport that keeps as many idle connections to a
// host as there are sessions calling through it, so that a steady load
// dials none.
func deepPool() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	return t
}

// serveHTTP serves s over Streamable HTTP on listen until ctx ends, then
// closes its sessions.
func serveHTTP(ctx context.Context, listen string, s *mcp.Server) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped
	for ss := range s.Sessions() {
		ss.Close()
	}
	return nil
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// self is the path of this program, which is also the upstream and the
// minimal proxy.
func self() string {
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}

// waitListening waits until addr accepts TCP connections, up to within.
func waitListening(ctx context.Context, addr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not listening within %v: %w", addr, within, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
