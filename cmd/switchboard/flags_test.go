package main

import (
	"errors"
	"flag"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-mcp/switchboard/internal/mcptest"
)

// TestParseTakesFlagsAnywhere: flags may come before, between and after
// the positional arguments; "--" ends them, unless it is a flag's value.
func TestParseTakesFlagsAnywhere(t *testing.T) {
	type parsed struct {
		Configs    []string
		JSON       bool
		Positional []string
	}
	for _, tc := range []struct {
		args []string
		want parsed
	}{
		{[]string{"a", "b"}, parsed{Positional: []string{"a", "b"}}},
		{[]string{"a", "--json", "b"}, parsed{JSON: true, Positional: []string{"a", "b"}}},
		{[]string{"--config", "f", "a", "b", "--config", "g"}, parsed{Configs: []string{"f", "g"}, Positional: []string{"a", "b"}}},
		{[]string{"a", "-config=f", "-json=false"}, parsed{Configs: []string{"f"}, Positional: []string{"a"}}},
		{[]string{"a", "--", "--json", "-b"}, parsed{Positional: []string{"a", "--json", "-b"}}},
		{[]string{"--json", "--", "-a"}, parsed{JSON: true, Positional: []string{"-a"}}},
		{[]string{"--config", "--", "a", "--json"}, parsed{Configs: []string{"--"}, JSON: true, Positional: []string{"a"}}},
		{[]string{"--config=--", "--", "--json"}, parsed{Configs: []string{"--"}, Positional: []string{"--json"}}},
		{[]string{"a", "-", "--json"}, parsed{JSON: true, Positional: []string{"a", "-"}}},
		{nil, parsed{}},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		var got parsed
		fs.Var((*configPaths)(&got.Configs), "config", "")
		fs.BoolVar(&got.JSON, "json", false, "")
		if err := parse(fs, tc.args); err != nil {
			t.Errorf("parse(%q) = %v", tc.args, err)
			continue
		}
		got.Positional = fs.Args()
		if len(got.Positional) == 0 {
			got.Positional = nil
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("parse(%q) (-want +got):\n%s", tc.args, diff)
		}
	}
}

// TestParseErrors: help after an argument is help, and a bad flag after one
// is a usage error that names the verb and what is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want error
	}{
		{[]string{"a", "-h"}, &exitError{code: 0}},
		{[]string{"a", "--help", "b"}, &exitError{code: 0}},
		{[]string{"a", "--bogus"}, &usageError{msg: "test: flag provided but not defined: --bogus"}},
		{[]string{"a", "--config"}, &usageError{msg: "test: flag needs an argument: --config"}},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Var(new(configPaths), "config", "")
		err := parse(fs, tc.args)
		var ee *exitError
		var ue *usageError
		switch want := tc.want.(type) {
		case *exitError:
			if !errors.As(err, &ee) || ee.code != want.code {
				t.Errorf("parse(%q) = %v, want exit %d", tc.args, err, want.code)
			}
		case *usageError:
			if !errors.As(err, &ue) || ue.msg != want.msg {
				t.Errorf("parse(%q) = %v, want the usage error %q", tc.args, err, want.msg)
			}
		}
	}
}

// TestEveryVerbTakesFlagsAfterArguments: every verb reads its flags after
// its positional arguments too; one without positional arguments reads a
// flag after a stray one, and says so.
func TestEveryVerbTakesFlagsAfterArguments(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, map[string]mcptest.Script{"m": {}}, nil)
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{args: []string{"call", "m__add", `{"a": 1, "b": 2}`, "--config", cfg}, want: "3\n"},
		{args: []string{"call", "m__echo", "--config", cfg, `{"text": "hi"}`}, want: `"hi"`},
		{args: []string{"call", "--config", cfg, "--", "m__echo"}, want: "{}\n"},
		{args: []string{"call", "m__echo", "--", "--config", cfg}, code: 2, want: "want TOOL [JSON-ARGS], got 3 arguments"},
		{args: []string{"reconnect", "web", "--gateway", "ftp://x"}, code: 2, want: "want the gateway's http or https URL"},
		{args: []string{"login", "web", "--wait", "0s"}, code: 2, want: "--wait 0s: want a positive duration"},
		{args: []string{"logout", "web", "--config", cfg}, want: "web: no login stored"},
		{args: []string{"version", "stray", "-h"}, want: "Usage: switchboard version"},
		{args: []string{"serve", "stray", "-h"}, want: "Usage: switchboard serve"},
		{args: []string{"tools", "stray", "-h"}, want: "Usage: switchboard tools"},
		{args: []string{"status", "stray", "-h"}, want: "Usage: switchboard status"},
		{args: []string{"check", "stray", "-h"}, want: "Usage: switchboard check"},
		{args: []string{"demo-server", "stray", "-h"}, want: "Usage: switchboard demo-server"},
		{args: []string{"tools", "stray", "--bogus"}, code: 2, want: "flag provided but not defined: --bogus"},
		{args: []string{"status", "stray", "--json", "--config", cfg}, code: 2, want: `unexpected argument "stray"`},
	} {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			out, stderr, code := cli(t, tc.args...)
			if code != tc.code || !strings.Contains(out+stderr, tc.want) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, stderr, tc.code, tc.want)
			}
		})
	}
}

// TestVersionHelp: version --help prints its usage and exits 0, as every
// verb does.
func TestVersionHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		out, stderr, code := cli(t, "version", arg)
		if code != 0 || out != "" || !strings.Contains(stderr, "Usage: switchboard version") {
			t.Errorf("version %s: exit %d, stdout %q, stderr %q; want exit 0 and the usage", arg, code, out, stderr)
		}
	}
}

// TestOpenableURL: a listener on every interface is shown at loopback, in
// a URL a browser opens.
func TestOpenableURL(t *testing.T) {
	for _, tc := range []struct {
		requested, bound string
		want             string
		all              bool
	}{
		{"127.0.0.1:7777", "127.0.0.1:7777", "http://127.0.0.1:7777/mcp", false},
		{"127.0.0.1:0", "127.0.0.1:41234", "http://127.0.0.1:41234/mcp", false},
		{"localhost:7777", "127.0.0.1:7777", "http://127.0.0.1:7777/mcp", false},
		{"[::1]:7777", "[::1]:7777", "http://[::1]:7777/mcp", false},
		{"192.0.2.7:7777", "192.0.2.7:7777", "http://192.0.2.7:7777/mcp", false},
		{"0.0.0.0:7777", "[::]:7777", "http://127.0.0.1:7777/mcp", true},
		{":7777", "[::]:7777", "http://127.0.0.1:7777/mcp", true},
		{"[::]:7777", "[::]:7777", "http://[::1]:7777/mcp", true},
		{"0.0.0.0:0", "[::]:39001", "http://127.0.0.1:39001/mcp", true},
	} {
		bound, err := net.ResolveTCPAddr("tcp", tc.bound)
		if err != nil {
			t.Fatal(err)
		}
		if got, all := openableURL(tc.requested, bound); got != tc.want || all != tc.all {
			t.Errorf("openableURL(%q, %v) = %q, %v; want %q, %v", tc.requested, bound, got, all, tc.want, tc.all)
		}
	}
}
