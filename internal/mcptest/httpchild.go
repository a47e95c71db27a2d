package mcptest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// ListenEnv, set beside [ScriptEnv], makes [RunIfChild] serve the script
// over Streamable HTTP on a free loopback port, rather than on stdio: see
// [StartHTTPProcess].
const ListenEnv = "MCPTEST_LISTEN"

// An HTTPProcess is a [Script] served over HTTP (as [StartHTTP] serves it)
// by a child process: the test binary re-executed, as [StdioCommand] runs
// it. What the server allocates is then not the test's, which matters to a
// test that measures its own memory.
type HTTPProcess struct {
	URL string // http://127.0.0.1:PORT/mcp

	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartHTTPProcess starts a child that serves s, and returns once it
// listens. The child lives until [HTTPProcess.Close]. It returns an error
// if the test binary's TestMain does not call [RunIfChild].
func StartHTTPProcess(s Script) (*HTTPProcess, error) {
	command, args, env := StdioCommand(s)
	cmd := exec.Command(command, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, ListenEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mcptest: http process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("mcptest: http process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mcptest: http process: %w", err)
	}
	p := &HTTPProcess{cmd: cmd, stdin: stdin}
	// The child's first line is its URL; then it writes nothing more.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening "); err == nil && ok {
		p.URL = url
		return p, nil
	}
	p.Close()
	return nil, fmt.Errorf("mcptest: http process: no URL on its stdout (does TestMain call RunIfChild?): %q, %v", line, err)
}

// Close ends the child, by closing its stdin, and waits for it to exit.
// It is not safe for concurrent use.
func (p *HTTPProcess) Close() error {
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("mcptest: http process: %w", err)
	}
	return nil
}

// serveHTTPChild is the child of [StartHTTPProcess]: it serves s, prints
// its URL, and stops when its stdin closes.
func serveHTTPChild(s Script) error {
	srv := NewServer(s)
	defer srv.Close()
	h, err := StartHTTP(srv)
	if err != nil {
		return err
	}
	defer h.Close()
	if _, err := fmt.Printf("listening %s\n", h.URL); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
