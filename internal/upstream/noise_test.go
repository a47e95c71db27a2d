package upstream

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// noisyUpstream is a stdio upstream of script that counts the lines it
// skips and logs to logs.
func noisyUpstream(t *testing.T, script mcptest.Script, logs *mcptest.LogBuffer) (*Upstream, *atomic.Int64) {
	t.Helper()
	var skipped atomic.Int64
	u := New(stdio("noisy", script), &Options{
		Logger:        slog.New(slog.NewTextHandler(logs, nil)),
		OnSkippedLine: func() { skipped.Add(1) },
	})
	t.Cleanup(func() { u.Close(time.Time{}) })
	if err := u.Connect(t.Context()); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return u, &skipped
}

// TestStdioServerThatPrints: a line on stdout that is not JSON-RPC, before
// the handshake or between two responses, short or 1 MiB long, plain text
// or a logger's JSON, is skipped, counted and logged; the session goes on,
// on the same process.
func TestStdioServerThatPrints(t *testing.T) {
	const logLine = `{"level":30,"msg":"started"}`
	for _, tt := range []struct {
		name   string
		script mcptest.Script
		first  string // the log's first=, escaped as the text handler does
	}{
		{"banner before initialize", mcptest.Script{GarbageOnStart: true}, `"mcptest: this line is not JSON"`},
		{"JSON log line before initialize", mcptest.Script{GarbageOnStart: true, Garbage: logLine}, strconv.Quote(logLine)},
		{"1 MiB line before initialize", mcptest.Script{GarbageOnStart: true, GarbageBytes: 1 << 20}, `"mcptest: this line is not JSON###`},
		{"stray line between responses", mcptest.Script{GarbageOnCall: true}, `"mcptest: this line is not JSON"`},
		{"1 MiB line between responses", mcptest.Script{GarbageOnCall: true, GarbageBytes: 1 << 20}, `"mcptest: this line is not JSON###`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.script.StateDir = t.TempDir()
			var logs mcptest.LogBuffer
			u, skipped := noisyUpstream(t, tt.script, &logs)
			pid := u.Snapshot().PID
			for want := 1; want <= 2; want++ {
				res, err := callTool(t.Context(), u, "increment", nil)
				if err != nil || mcptest.Text(res) != strconv.Itoa(want) {
					t.Fatalf("call %d = %v, %v; want %d", want, res, err, want)
				}
			}
			lines := 1
			if tt.script.GarbageOnCall {
				lines = 2
			}
			if got := skipped.Load(); got != int64(lines) {
				t.Errorf("%d lines skipped, want %d", got, lines)
			}
			if snap := u.Snapshot(); snap.PID != pid || snap.Reconnects != 0 || snap.State != Connected {
				t.Errorf("after the calls: %s, pid %d (was %d), %d reconnects; want the same session", snap.State, snap.PID, pid, snap.Reconnects)
			}
			counts, err := mcptest.ReadCounts(tt.script.StateDir)
			if err != nil {
				t.Fatal(err)
			}
			if counts.Starts != 1 || counts.Calls != 2 {
				t.Errorf("%d starts and %d calls, want 1 and 2", counts.Starts, counts.Calls)
			}
			// The first line is logged at once; a second, within 10 s, is not.
			log := logs.String()
			want := `level=WARN msg="skipped lines on stdout that are not JSON-RPC" lines=1 first=` + tt.first
			if strings.Count(log, "skipped lines on stdout") != 1 || !strings.Contains(log, want) {
				t.Errorf("log:\n%s\nwant one line with %s", log, want)
			}
		})
	}
}

// TestStrayLinesInABurst: 64 calls at once to a server that prints a line
// before each answer are each answered once, on one process.
func TestStrayLinesInABurst(t *testing.T) {
	const calls = 64
	state := t.TempDir()
	var logs mcptest.LogBuffer
	u, skipped := noisyUpstream(t, mcptest.Script{GarbageOnCall: true, StateDir: state}, &logs)
	var wg sync.WaitGroup
	results := make([]int, calls)
	errs := make([]error, calls)
	for i := range calls {
		wg.Go(func() {
			res, err := callTool(t.Context(), u, "increment", nil)
			if err != nil {
				errs[i] = err
				return
			}
			results[i], errs[i] = strconv.Atoi(mcptest.Text(res))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	slices.Sort(results)
	want := make([]int, calls)
	for i := range want {
		want[i] = i + 1
	}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("counts returned (-want +got):\n%s", diff)
	}
	counts, err := mcptest.ReadCounts(state)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Starts != 1 || counts.Calls != calls {
		t.Errorf("%d starts and %d calls, want 1 and %d", counts.Starts, counts.Calls, calls)
	}
	if got := skipped.Load(); got != calls {
		t.Errorf("%d lines skipped, want %d", got, calls)
	}
}

// TestLongLineThatIsNotJSONRPC: a line over judgeLimit that starts like
// JSON is passed on unjudged; if it is not a message, the session ends
// with an error that says so. Nothing is lost: the call was not answered,
// and it is not replayed, as it may have run.
func TestLongLineThatIsNotJSONRPC(t *testing.T) {
	var logs mcptest.LogBuffer
	u, skipped := noisyUpstream(t, mcptest.Script{GarbageOnCall: true, Garbage: "{", GarbageBytes: judgeLimit + 1}, &logs)
	_, err := callTool(t.Context(), u, "increment", nil)
	if err == nil || !strings.Contains(err.Error(), "server wrote something that is not JSON-RPC") {
		t.Errorf("call = %v, want a clear error", err)
	}
	if got := skipped.Load(); got != 0 {
		t.Errorf("%d lines skipped, want 0", got)
	}
}

// TestNoiseLogIsRateLimited: the first skipped line is logged at once;
// those that follow within 10 s are logged 10 s after it, as a count and
// the first of them; a line after a quiet spell is logged at once again.
// Close cancels a log line that is due, and any after.
func TestNoiseLogIsRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var logged []string
		n := newNoiseLogFunc(func(lines int, first string) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprintf("%v: %d %s", time.Now().Format("05"), lines, first))
		})
		show := func(line []byte) string { return string(line) }
		check := func(want ...string) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(want, logged); diff != "" {
				t.Errorf("logged (-want +got):\n%s", diff)
			}
		}
		// The bubble's clock starts at midnight: at :00.
		n.noted([]byte("a"), show)
		n.noted([]byte("b"), show)
		mcptest.PassTime(5 * time.Second)
		n.noted([]byte("c"), show)
		check("00: 1 a")
		mcptest.PassTime(5 * time.Second)
		check("00: 1 a", "10: 2 b")
		mcptest.PassTime(9 * time.Second)
		n.noted([]byte("d"), show) // within 10 s of the last log line
		mcptest.PassTime(time.Second)
		check("00: 1 a", "10: 2 b", "20: 1 d")
		mcptest.PassTime(time.Minute)
		n.noted([]byte("e"), show) // after a quiet spell
		n.noted([]byte("f"), show)
		check("00: 1 a", "10: 2 b", "20: 1 d", "20: 1 e")
		n.stop()
		mcptest.PassTime(time.Minute)
		n.noted([]byte("g"), show)
		mcptest.PassTime(time.Minute)
		check("00: 1 a", "10: 2 b", "20: 1 d", "20: 1 e")
	})
}

// TestNoiseLogSharedByAServersProcesses: an upstream that logs its skipped
// lines with another's (a process of a server's own for a client session)
// shares its limit of a log line every 10 s, and its close leaves the
// other's log going.
func TestNoiseLogSharedByAServersProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs mcptest.LogBuffer
		srv := config.Server{Name: "s", Command: "x"}
		shared := New(srv, &Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{} // the bubble's clock says nothing here
				}
				return a
			},
		}))})
		defer shared.Close(time.Time{})
		own := New(srv, &Options{LogSkippedWith: shared})
		shared.dial.skipLine([]byte("a"))
		own.dial.skipLine([]byte("b"))
		own.dial.skipLine([]byte("c"))
		own.Close(time.Time{})
		mcptest.PassTime(10 * time.Second)
		synctest.Wait()
		shared.dial.skipLine([]byte("d"))
		mcptest.PassTime(10 * time.Second)
		synctest.Wait()
		want := `level=WARN msg="skipped lines on stdout that are not JSON-RPC" lines=1 first=a
level=WARN msg="skipped lines on stdout that are not JSON-RPC" lines=2 first=b
level=WARN msg="skipped lines on stdout that are not JSON-RPC" lines=1 first=d
`
		if diff := cmp.Diff(want, logs.String()); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
	})
}

// TestShowLine: a skipped line is logged redacted, then cut short, with
// what is not printable replaced.
func TestShowLine(t *testing.T) {
	u := New(config.Server{Name: "x", Command: "x"}, nil)
	defer u.Close(time.Time{})
	const secret = "sk-planted-5ecret"
	u.red.secrets.Add(secret)
	line := "token=" + secret + " \x1b[31mred\x1b[0m \u202e\xff tab\t" + strings.Repeat("é", 200)
	shown := "token=[redacted] \uFFFD[31mred\uFFFD[0m \uFFFD\uFFFD tab\uFFFD"
	want := shown + strings.Repeat("é", (shownNoise-len("token=[redacted] \x1b[31mred\x1b[0m \u202e\xff tab\t"))/2) + "…"
	if got := showLine(u.Redact, []byte(line)); got != want {
		t.Errorf("showLine =\n%s\nwant\n%s", got, want)
	}
}

// TestServerLogStorm: a server that sends a 16 KiB log message every 10 ms
// for 10 s gets at most serverLogBurst of them a period into the log, each
// cut at maxLogData, and one line a period says how many were dropped.
func TestServerLogStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const storm = 1000
		var logs mcptest.LogBuffer
		u, srv := connectedInMemory(t, mcptest.Script{}, config.Server{Name: "chatty"}, &Options{
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		if err := u.SetLoggingLevel(t.Context(), "debug"); err != nil {
			t.Fatal(err)
		}
		data := strings.Repeat("x", 16<<10)
		for range storm {
			srv.LogToAll(data)
			mcptest.PassTime(10 * time.Millisecond)
		}
		mcptest.PassTime(serverLogEvery)
		synctest.Wait()
		out := logs.String()
		if len(out) > 2*serverLogBurst*(maxLogData+1000) {
			t.Errorf("%d bytes of log for a storm of %d MB, want no more than %d messages of %d bytes", len(out), storm*len(data)>>20, 2*serverLogBurst, maxLogData)
		}
		passed, dropped := 0, 0
		for line := range strings.Lines(out) {
			switch {
			case strings.Contains(line, `msg="server log"`):
				passed++
				if !strings.Contains(line, "server=chatty") || !strings.Contains(line, "(cut: 16384 bytes, over the limit of 4096)") {
					t.Errorf("log line %.200q..., want the server and the data cut", line)
				}
			case strings.Contains(line, "dropped log messages from the server"):
				_, n, _ := strings.Cut(line, "dropped=")
				n, _, _ = strings.Cut(n, " ")
				k, err := strconv.Atoi(n)
				if err != nil || !strings.Contains(line, "server=chatty") || !strings.Contains(line, `limit="100 per 10s"`) {
					t.Errorf("summary %.300q, want the server, a count and the limit", line)
				}
				dropped += k
			}
		}
		if passed > 2*serverLogBurst || passed+dropped != storm {
			t.Errorf("%d messages logged and %d dropped, want at most %d logged and %d in all", passed, dropped, 2*serverLogBurst, storm)
		}
	})
}

// TestCutLogData: a log message's data over maxLogData is cut, as text,
// at a character's start; a shorter one is passed as it is.
func TestCutLogData(t *testing.T) {
	//lint:ignore SA1019 Switchboard forwards logging while servers and clients use it.
	short := &mcp.LoggingMessageParams{Level: "info", Data: map[string]any{"a": "b"}}
	if got := cutLogData(short); got != short {
		t.Errorf("cutLogData(short) = %v, want it unchanged", got)
	}
	//lint:ignore SA1019 Switchboard forwards logging while servers and clients use it.
	long := &mcp.LoggingMessageParams{Level: "info", Data: map[string]any{"k": "a" + strings.Repeat("é", maxLogData)}}
	got := cutLogData(long)
	text, ok := got.Data.(string)
	if !ok || !utf8.ValidString(text) || !strings.HasPrefix(text, `{"k":"aé`) || !strings.HasSuffix(text, "… (cut: 8201 bytes, over the limit of 4096)") || len(text) > maxLogData+100 {
		t.Errorf("cutLogData(long) = %.100q...%q, want its start, as valid text, and what was cut", text, text[max(len(text)-60, 0):])
	}
	if _, ok := long.Data.(map[string]any); !ok {
		t.Errorf("cutLogData changed the message it was given")
	}
}
