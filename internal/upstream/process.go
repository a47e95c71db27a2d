package upstream

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/proctree"
)

// A process is a running stdio server, the root of a process tree that
// ends with it (see proctree).
type process struct {
	cmd    *exec.Cmd
	tree   *proctree.Tree
	stdin  *os.File // our write end of the child's stdin
	stdout *os.File // our read end of the child's stdout
	stderr *tail

	exited  chan struct{} // closed when Wait has returned
	waitErr error         // Wait's result; read only after exited is closed

	stderrDone chan struct{} // closed when the stderr reader has returned
	stderrPipe *os.File
}

// startProcess starts srv's command, resolved, in env. The pipes are made
// here rather than by exec, so that Wait never closes a pipe that the MCP
// connection is still reading, and never blocks on a grandchild that holds
// one open.
func startProcess(srv *config.Server, env []string, secrets *config.Secrets) (_ *process, err error) {
	var opened []*os.File
	pipe := func() (r, w *os.File) {
		if err != nil {
			return nil, nil
		}
		r, w, err = os.Pipe()
		opened = append(opened, r, w)
		return r, w
	}
	stdinR, stdinW := pipe()
	stdoutR, stdoutW := pipe()
	stderrR, stderrW := pipe()
	closeAll := func() {
		for _, f := range opened {
			if f != nil {
				f.Close()
			}
		}
	}
	if err != nil {
		closeAll()
		return nil, err
	}

	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = env
	cmd.Dir = srv.Cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	tree, err := proctree.Start(cmd)
	if err != nil {
		closeAll()
		return nil, startError(srv, err)
	}
	// The child has its own copies; ours would keep its pipes open forever.
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()

	p := &process{
		cmd:        cmd,
		tree:       tree,
		stdin:      stdinW,
		stdout:     stdoutR,
		stderr:     newTail(stderrTailLines, secrets),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		stderrPipe: stderrR,
	}
	go func() {
		defer close(p.stderrDone)
		p.stderr.readFrom(stderrR)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func startError(srv *config.Server, err error) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("command %q not found", srv.Command)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("command %q is not executable", srv.Command)
	}
	return fmt.Errorf("start %q: %w", srv.Command, err)
}

// exitError describes how the process ended. It must be called after exited
// is closed.
func (p *process) exitError() error {
	if p.waitErr == nil {
		return errors.New("process exited with status 0")
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("process killed by signal %v", ws.Signal())
		}
		return fmt.Errorf("process exited with status %d", ee.ExitCode())
	}
	return fmt.Errorf("process: %w", p.waitErr)
}

// refused reports whether the process is a Switchboard that refused to
// run inside the gateway (see config.Chain.Check): it exited with
// config.ChainExitCode, and said why on stderr. It must be called after
// exited is closed, and once the stderr reader has read what there was.
func (p *process) refused() bool {
	var ee *exec.ExitError
	return errors.As(p.waitErr, &ee) && ee.ExitCode() == config.ChainExitCode && p.stderr.hasPrefix(chainRefusal)
}

// chainRefusal starts the line on stderr of a Switchboard that refuses to
// run inside another: the switchboard command prints its errors after
// "switchboard: ".
const chainRefusal = "switchboard: " + config.ChainRefusal

// waitExit waits up to d for the process to exit, or until cut is closed.
func (p *process) waitExit(d time.Duration, cut <-chan struct{}) bool {
	return within(p.exited, d, cut)
}

// waitStderr waits up to d for the stderr reader to reach the end, or until
// cut is closed.
func (p *process) waitStderr(d time.Duration, cut <-chan struct{}) bool {
	return within(p.stderrDone, d, cut)
}

// within waits up to d for done to be closed, or until cut is (nil: never),
// and reports whether done was.
func within(done <-chan struct{}, d time.Duration, cut <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-cut:
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// stop ends the process as the MCP stdio spec asks: close its stdin, wait
// (at most stdinGrace), SIGTERM (on Windows, CTRL_BREAK), wait, SIGKILL. It
// then kills what is left of the tree, so that no grandchild survives.
// grace bounds the other waits; once kill is closed, the waits end at once.
// stop is called once, by the owner of the session; it reports an error
// only if the process had to be killed.
func (p *process) stop(stdinGrace, grace time.Duration, kill <-chan struct{}) error {
	p.stdin.Close()
	defer p.tree.Release()
	var err error
	if !p.waitExit(stdinGrace, kill) {
		p.tree.Interrupt()
		if !p.waitExit(grace, kill) {
			p.tree.Kill()
			err = fmt.Errorf("process ignored stdin close and %s: %w", proctree.InterruptName, ErrKilled)
			if !p.waitExit(grace, nil) {
				err = errors.New("process did not exit after SIGKILL")
			}
		}
	}
	// The root is gone; anything still in its tree is an orphan.
	p.tree.Kill()
	// A process outside the group may hold stderr open: stop reading after
	// a grace period rather than wait for it.
	p.waitStderr(grace, kill)
	p.stderrPipe.Close()
	<-p.stderrDone
	p.stdout.Close()
	return err
}
