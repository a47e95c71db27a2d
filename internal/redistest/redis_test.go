package redistest

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// ping sends PING to addr and returns the answer's line, or the error.
func ping(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// TestStartStopRestart: a started server answers; a stopped one does not;
// a restarted one answers on the same port.
func TestStartStopRestart(t *testing.T) {
	r := Start(t)
	if got, err := ping(r.Addr()); got != "+PONG" {
		t.Fatalf("PING = %q, %v; want +PONG", got, err)
	}
	r.Stop(t)
	if _, err := ping(r.Addr()); err == nil {
		t.Fatal("a stopped server answered")
	}
	r.Restart(t)
	if got, err := ping(r.Addr()); got != "+PONG" {
		t.Fatalf("PING after restart = %q, %v; want +PONG", got, err)
	}
}
