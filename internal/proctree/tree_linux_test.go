package proctree

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// startShell starts script in a tree: see startTree.
func startShell(t *testing.T, script string) (*Tree, *exec.Cmd, int) {
	t.Helper()
	return startTree(t, exec.Command("/bin/sh", "-c", script))
}

func TestKillReachesOrphans(t *testing.T) {
	// The root exits at once, leaving its child behind, as npx can.
	tree, cmd, orphan := startShell(t, `sleep 300 & echo $!`)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("root: %v", err)
	}
	exited := mcptest.WatchExit(t, orphan)
	tree.Kill()
	if !exited(time.Minute) {
		t.Fatalf("orphan %d survived Kill after its parent had exited", orphan)
	}
}

func TestInterruptAsksTheWholeTree(t *testing.T) {
	// The grandchild says its pid itself, once it is a process of its own:
	// told by $!, the signal could reach it while it was still a copy of
	// its parent, running the parent's trap.
	tree, cmd, grandchild := startShell(t, `trap 'exit 7' TERM; sh -c 'echo $$; exec sleep 300' & wait`)
	exited := mcptest.WatchExit(t, grandchild)
	tree.Interrupt()
	if !exited(time.Minute) {
		t.Fatalf("grandchild %d ignored Interrupt", grandchild)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("root ended with %v, want its TERM trap's exit status 7", err)
	}
}

func TestStartRefusesPresetAttributes(t *testing.T) {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = sysProcAttr()
	if _, err := Start(cmd); err == nil || !strings.Contains(err.Error(), "SysProcAttr") {
		t.Errorf("Start = %v, want it to refuse a preset SysProcAttr", err)
	}
}

func TestStartReportsAMissingCommand(t *testing.T) {
	_, err := Start(exec.Command("/nonexistent/switchboard-test"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start = %v, want ErrNotExist", err)
	}
}
