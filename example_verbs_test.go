package switchboard_test

import (
	"fmt"

	"github.com/switchboard-mcp/switchboard"
)

// A log line shows the last of the stderr lines a server's error carries.
func ExampleShortStderr() {
	msg := `server "db": session: process exited; stderr: starting | reading config | no password for user "app"`
	fmt.Println(switchboard.ShortStderr(msg, 1))
	// Output: server "db": session: process exited; stderr: … | no password for user "app"
}
