package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ansiRE matches the suite's colour codes.
var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// scenarioRE matches a line of the client suite's summary.
var scenarioRE = regexp.MustCompile(`(?m)^[✓✗] (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?$`)

// clientDone is the line internal/conformance/client prints to stdout
// when a scenario ran to its end, just before it exits 0.
const clientDone = "conformance client: done"

// expectedFailures is the suite's expected-failures file: the scenarios
// that may fail, each with its reason. The suite itself fails a run in
// which one of them passes.
const expectedFailures = "expected-failures.yml"

// expectedClientFailures returns the client scenarios that
// expectedFailures lists.
func expectedClientFailures(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(expectedFailures)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	inClient := false
	for line := range strings.Lines(string(data)) {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "-"):
			inClient = trimmed == "client:"
		case inClient && strings.HasPrefix(trimmed, "- "):
			names[strings.TrimSpace(strings.TrimPrefix(trimmed, "- "))] = true
		}
	}
	return names
}

// clientGivesUp are the scenarios whose server never lets the client
// finish, with why: the suite checks that the client stops, and the
// client then fails.
var clientGivesUp = map[string]string{
	"auth/scope-retry-limit": "the server refuses every token for want of scope: the login must stop asking, and the request fail",
}

// clientRun is one run of the client suite.
type clientRun struct {
	out       string            // without colour codes
	exitErr   error             // the suite's exit: nil when it passed
	scenarios map[string][3]int // passed, failed, warnings
	results   string            // the -o directory
}

// runClientSuite runs the core client suite against the program bin, with
// extra arguments (--scenario NAME runs that scenario instead).
func (p peers) runClientSuite(t *testing.T, bin string, extra ...string) clientRun {
	t.Helper()
	run := clientRun{results: t.TempDir(), scenarios: map[string][3]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	args := []string{"client", "--command", bin, "-o", run.results}
	if !slices.Contains(extra, "--scenario") {
		args = append(args, "--suite", "core")
	}
	args = append(args, extra...)
	raw, err := p.command(t, ctx, p.conformance, args...).CombinedOutput()
	run.out, run.exitErr = ansiRE.ReplaceAllString(string(raw), ""), err
	if m := singleRE.FindStringSubmatch(run.out); m != nil && slices.Contains(extra, "--scenario") {
		// One scenario's summary: "Passed: 5/5, 0 failed, 0 warnings".
		name := extra[slices.Index(extra, "--scenario")+1]
		var counts [3]int
		counts[0], _ = strconv.Atoi(m[1])
		counts[1], _ = strconv.Atoi(m[2])
		counts[2], _ = strconv.Atoi(m[3])
		run.scenarios[name] = counts
		return run
	}
	if totalRE.FindStringSubmatch(run.out) == nil {
		t.Fatalf("the suite printed no total (%v):\n%s", err, run.out)
	}
	for _, m := range scenarioRE.FindAllStringSubmatch(run.out, -1) {
		var counts [3]int
		for i := range counts {
			counts[i], _ = strconv.Atoi(m[2+i]) // warnings: "" when there were none
		}
		run.scenarios[m[1]] = counts
	}
	return run
}

// TestConformanceClient: the official suite, in client mode, scores
// internal/conformance/client, which runs every scenario through our own
// internal/upstream package and its login (internal/oauth). The suite
// passes with expected-failures.yml (which lists none), every other
// scenario passes with no warning and runs to its end (but those of
// clientGivesUp, which must not), and each scores what go-sdk's own
// everything-client, the bar, scores, when it is installed (as in CI).
func TestConformanceClient(t *testing.T) {
	p := findPeers(t)
	bin := filepath.Join(t.TempDir(), "conformance-client")
	if strings.ContainsAny(bin, " \t") {
		t.Skipf("the suite splits its --command on spaces, and the temporary directory has one: %q", bin)
	}
	if out, err := exec.Command("go", "build", "-o", bin, "../internal/conformance/client").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	expected := expectedClientFailures(t)
	run := p.runClientSuite(t, bin, "--expected-failures", expectedFailures)
	t.Log(totalRE.FindString(run.out))
	if run.exitErr != nil {
		t.Errorf("the suite failed (%v): a scenario failed that %s does not list, or one it lists passed:\n%s", run.exitErr, expectedFailures, run.out)
	}
	ran := 0
	for name, c := range run.scenarios {
		if expected[name] {
			continue
		}
		ran++
		if c[0] == 0 || c[1] != 0 || c[2] != 0 {
			t.Errorf("%s: %d passed, %d failed, %d warnings; want passes only", name, c[0], c[1], c[2])
		}
		stdout := resultOf(t, run.results, name, "stdout.txt")
		switch _, givesUp := clientGivesUp[name]; {
		case givesUp && strings.Contains(stdout, clientDone):
			t.Errorf("%s: the client ran to its end; it should have given up", name)
		case !givesUp && !strings.Contains(stdout, clientDone):
			t.Errorf("%s: the client did not run to its end; stderr:\n%s", name, resultOf(t, run.results, name, "stderr.txt"))
		}
	}
	if ran == 0 {
		t.Errorf("the client ran no scenario:\n%s", run.out)
	}
	for line := range strings.Lines(run.out) {
		if strings.Contains(line, "WARNING") {
			t.Errorf("the suite warned: %s", strings.TrimSpace(line))
		}
	}

	// The bar: go-sdk's everything-client, on the same scenarios.
	if p.everythingClient == "" {
		t.Log("go-sdk's everything-client is not installed: not compared")
		return
	}
	bar := p.runClientSuite(t, p.everythingClient)
	if bar.exitErr != nil {
		t.Errorf("go-sdk's everything-client fails the suite (%v):\n%s", bar.exitErr, failuresOf(bar.out))
	}
	for name, c := range run.scenarios {
		if b := bar.scenarios[name]; !expected[name] && c != b {
			t.Errorf("%s: passed, failed, warnings %v; go-sdk's everything-client %v", name, c, b)
		}
	}
}

// resultOf returns the file the suite saved for the one run of scenario
// under results.
func resultOf(t *testing.T, results, scenario, file string) string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(results, scenario+"-*", file))
	if err != nil || len(paths) != 1 {
		t.Fatalf("the suite's %s for %s: found %q (%v)", file, scenario, paths, err)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// singleRE is the summary of a run of one scenario.
var singleRE = regexp.MustCompile(`Passed: (\d+)/\d+, (\d+) failed, (\d+) warnings`)

// moreAuthScenarios are the auth scenarios of the suite outside its core
// suite, for older and newer revisions of the spec.
var moreAuthScenarios = []string{
	"auth/2025-03-26-oauth-metadata-backcompat",
	"auth/2025-03-26-oauth-endpoint-fallback",
	"auth/resource-mismatch",
	"auth/offline-access-scope",
	"auth/offline-access-not-supported",
}

// TestConformanceClientMoreAuth: on the auth scenarios outside the core
// suite, our client passes at least every check go-sdk's everything-client
// passes, and fails none that it passes.
func TestConformanceClientMoreAuth(t *testing.T) {
	p := findPeers(t)
	if p.everythingClient == "" {
		skipForPeers(t, "interop peer missing:\n"+describe(lookPeers().missing()))
	}
	bin := filepath.Join(t.TempDir(), "conformance-client")
	if out, err := exec.Command("go", "build", "-o", bin, "../internal/conformance/client").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, name := range moreAuthScenarios {
		ours := p.runClientSuite(t, bin, "--scenario", name).scenarios[name]
		bar := p.runClientSuite(t, p.everythingClient, "--scenario", name).scenarios[name]
		t.Logf("%s: ours %v, go-sdk's %v (passed, failed, warnings)", name, ours, bar)
		if ours[0] == 0 || ours[0] < bar[0] || ours[1] > bar[1] || ours[2] > bar[2] {
			t.Errorf("%s: ours %v, go-sdk's %v (passed, failed, warnings)", name, ours, bar)
		}
	}
}
