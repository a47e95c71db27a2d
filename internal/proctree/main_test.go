package proctree

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"testing"

	"go.uber.org/goleak"
)

// The test binary plays the processes of a tree when one of these is set.
const (
	// orphanerEnv: a parent that starts the command it names in a tree,
	// prints the root's pid and exits without ending it (see
	// TestTreeDiesWithItsParent).
	orphanerEnv = "PROCTREE_TEST_ORPHANER"
	// parentEnv: a root that starts a sleeper of its own, prints its pid,
	// then sleeps too.
	parentEnv = "PROCTREE_TEST_PARENT"
	// sleeperEnv: a process that sleeps until it is killed.
	sleeperEnv = "PROCTREE_TEST_SLEEPER"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(sleeperEnv) != "":
		untilEnded()
	case os.Getenv(parentEnv) != "":
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), sleeperEnv+"=1")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(child.Process.Pid)
		untilEnded() // whatever its child does

	case os.Getenv(orphanerEnv) != "":
		cmd := exec.Command(os.Getenv(orphanerEnv), "300")
		if cmd.Path == os.Args[0] {
			cmd.Env = append(os.Environ(), sleeperEnv+"=1")
		}
		t, err := Start(cmd)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(t.Pid())
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// untilEnded blocks the process until a signal ends it (SIGTERM or
// SIGKILL, the job's end on Windows): the processes of a tree under test
// do nothing else. Waiting for a signal, rather than on nothing, keeps
// the runtime from taking it for a deadlock.
func untilEnded() {
	ended := make(chan os.Signal, 1)
	signal.Notify(ended, os.Interrupt)
	<-ended
	os.Exit(0)
}
