package toolsearch

import "strings"

// maxAboutBytes is the most [ServerContext] keeps of each short thing known
// of a server (its description and the name, title and description it
// reports): a line or two says what a server is for, and the server writes
// three of them.
const maxAboutBytes = 256

// About is what is known of a server, from which [ServerContext] makes its
// tools' [Doc.Context]. Every field may be empty.
type About struct {
	// Key is the server's name in the configuration ("google-maps").
	Key string
	// Description is what the configuration says the server is for.
	Description string
	// Package is the package the server runs from
	// ("@modelcontextprotocol/server-memory@1.2.3"); a version is cut
	// off, since no one asks for one.
	Package string
	// Name, Title and Summary are the serverInfo the server answered
	// initialize with: its name, title and description.
	Name, Title, Summary string
}

// ServerContext returns the [Doc.Context] of a server's tools: the fields
// of a, a line each, those the server gives cut to their first words
// within a few hundred bytes.
func ServerContext(a About) string {
	pkg := a.Package
	if at := strings.LastIndexByte(pkg, '@'); at > 0 {
		pkg = pkg[:at]
	}
	var parts []string
	for _, s := range []string{a.Key, a.Description, pkg, a.Name, a.Title, a.Summary} {
		s, _ = cutWords(s, maxAboutBytes)
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}
