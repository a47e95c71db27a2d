package main

import "testing"

func TestPrintable(t *testing.T) {
	tests := []struct {
		in, want, wantLine string
	}{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`, `\x1b]0;pwned\x07title`},
		{"\x1b[2J", `\x1b[2J`, `\x1b[2J`},
		{"a\nb\tc\rd", "a\nb\tc\\x0dd", `a\x0ab\x09c\x0dd`},
		{"\u009b31m \x7f", `\u009b31m \x7f`, `\u009b31m \x7f`},
		{"evil\u202egpj.exe \u2066x\u2069", `evil\u202egpj.exe \u2066x\u2069`, `evil\u202egpj.exe \u2066x\u2069`},
		{"bad \xff\x9b byte", `bad \xff\x9b byte`, `bad \xff\x9b byte`},
		{"line\u2028sep", `line\u2028sep`, `line\u2028sep`},
	}
	for _, tt := range tests {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := printableLine(tt.in); got != tt.wantLine {
			t.Errorf("printableLine(%q) = %q, want %q", tt.in, got, tt.wantLine)
		}
	}
}
