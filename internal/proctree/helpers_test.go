//go:build linux || windows

package proctree

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// startTree starts cmd in a tree, to be ended when the test is, and returns
// it with the pid that cmd prints on its first line: a grandchild's.
func startTree(t *testing.T, cmd *exec.Cmd) (*Tree, *exec.Cmd, int) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tree.Kill()
		cmd.Process.Kill() // in case the tree was released: Kill is then a no-op
		cmd.Wait()
		tree.Release()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the grandchild's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", line, err)
	}
	return tree, cmd, pid
}
