package toolsearch

import "strings"

// MaxContextBytes is the most of a server's instructions [ServerContext]
// keeps: the first words, which say what the server is for. Instructions
// are the server's to write, and each of its tools is indexed with them, so
// a longer text would cost index memory and time for words that rarely
// tell one server from another.
const MaxContextBytes = 2048

// ServerContext returns the [Doc.Context] of a server's tools from what is
// known of it: its config key ("google-maps"), the package it runs from
// ("@modelcontextprotocol/server-memory@1.2.3", "" if none: a version is
// cut off, since no one asks for one) and its initialize instructions, cut
// to their first words within [MaxContextBytes] (cut reports it).
func ServerContext(key, pkg, instructions string) (context string, cut bool) {
	if at := strings.LastIndexByte(pkg, '@'); at > 0 {
		pkg = pkg[:at]
	}
	instructions, cut = cutWords(instructions, MaxContextBytes)
	instructions = strings.TrimSpace(instructions)
	var parts []string
	for _, s := range []string{key, pkg, instructions} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n"), cut
}
