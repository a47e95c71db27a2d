package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/gateway"
)

// An embedder serves the gateway within the limits the switchboard command
// uses: at most MaxConns connections, and deadlines on every client that
// sends or reads nothing.
func ExampleNewHTTPServer() {
	m := switchboard.New(&config.Config{}, nil)
	defer m.Close()
	g := gateway.New(m, nil)
	defer g.Close()

	srv := gateway.NewHTTPServer(g.Handler(), &gateway.HTTPOptions{
		MaxConns:     256,
		WriteTimeout: time.Minute, // a client may leave its response unread a minute
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	fmt.Println(resp.Status)

	srv.Shutdown(context.Background())
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	// Output:
	// 200 OK
}
