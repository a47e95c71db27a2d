// Package proctree starts a program so that it, and every process it starts
// in turn, can be ended together, and ends with Switchboard if Switchboard
// dies first.
//
// The means differ by platform, each in a file of its own:
//   - Linux: a process group, and a parent-death signal (SIGKILL);
//   - macOS and the other Unix systems: a process group;
//   - Windows: a job object that kills its processes when its last handle
//     closes, which the system does when Switchboard exits.
//
// What is common to all is here: a [Tree] is asked to stop ([Tree.Interrupt]),
// then ended ([Tree.Kill]), then released ([Tree.Release]).
package proctree

import (
	"fmt"
	"os/exec"
)

// A Tree is a started command and the processes it starts.
type Tree struct {
	cmd *exec.Cmd
	sys *sysTree
}

// Start starts cmd as the root of a tree of its own. cmd.SysProcAttr must
// be nil: Start sets it.
func Start(cmd *exec.Cmd) (*Tree, error) {
	if cmd.SysProcAttr != nil {
		return nil, fmt.Errorf("proctree: start %s: SysProcAttr is already set", cmd.Path)
	}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sys, err := adopt(cmd)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("proctree: start %s: %w", cmd.Path, err)
	}
	return &Tree{cmd: cmd, sys: sys}, nil
}

// InterruptName names what Interrupt sends, for messages.
const InterruptName = interruptName

// Pid is the process ID of the tree's root.
func (t *Tree) Pid() int { return t.cmd.Process.Pid }

// Interrupt asks the tree to stop: SIGTERM to the process group on Unix,
// CTRL_BREAK to the root's console process group on Windows (which reaches
// it only if it shares Switchboard's console). A process may ignore it.
func (t *Tree) Interrupt() { t.sys.interrupt() }

// Kill ends every process left in the tree, the root's descendants too,
// even after the root has exited. It may be called more than once; after
// Release, it does nothing on Windows.
func (t *Tree) Kill() { t.sys.kill() }

// Release frees what holds the tree together, once the caller is done
// with it; on Windows, it ends what is left of the tree.
func (t *Tree) Release() { t.sys.release() }
