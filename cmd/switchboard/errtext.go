package main

import "github.com/switchboard-mcp/switchboard"

// maxTableError is how many characters of a server's error a line of a
// table (status, check) shows: the error of a stdio server that failed
// carries up to 23 lines of what it wrote to stderr, which would make a
// row of thousands.
const maxTableError = 200

// tableError returns text, a server's error, cut to maxTableError for a
// table: the lines of stderr it carries give way first, but for those
// that look like the server's own cause (see switchboard.FitError). A text
// that was cut ends with "… (FULL shows all)", where FULL says what does.
func tableError(text, full string) string {
	return switchboard.FitError(text, maxTableError, " … ("+full+" shows all)")
}

// maxLineError is how many characters of a server's error a line on stderr
// shows (tools, call): room for the cause and a few lines of what the
// server wrote, not its whole usage text.
const maxLineError = 400

// lineError returns text, a server's error, cut to maxLineError as
// tableError cuts it.
func lineError(text string) string {
	return switchboard.FitError(text, maxLineError, " … (status --json shows all)")
}
