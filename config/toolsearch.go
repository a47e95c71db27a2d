package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ToolSearchMode says when a gateway serves its tools behind search_tools
// and call_tool instead of listing them all.
type ToolSearchMode int

// The modes of tool search.
const (
	ToolSearchOff  ToolSearchMode = iota // every tool is listed (the default)
	ToolSearchOn                         // the two tools, and those of alwaysLoad servers
	ToolSearchAuto                       // on when more than Threshold tools are exposed
)

// DefaultToolSearchThreshold is N of "auto" without one.
const DefaultToolSearchThreshold = 40

// ToolSearch is the tool search setting: of `serve --tool-search MODE` or
// the config's top-level "toolSearch". The zero value is off.
type ToolSearch struct {
	Mode ToolSearchMode
	// Threshold is the N of auto:N: search is on while more than N tools
	// are exposed.
	Threshold int
}

// ErrToolSearchMode means a tool search setting is not one of off, on,
// auto and auto:N.
var ErrToolSearchMode = errors.New(`want "off", "on", "auto" or "auto:N" (N a whole number)`)

// ParseToolSearch parses a tool search setting: "off", "on", "auto" or
// "auto:N", N a whole number of tools (auto alone is auto:40). An error
// wraps [ErrToolSearchMode] and quotes the value.
func ParseToolSearch(s string) (ToolSearch, error) {
	switch mode, n, hasN := strings.Cut(strings.TrimSpace(s), ":"); {
	case !hasN && mode == "off":
		return ToolSearch{}, nil
	case !hasN && mode == "on":
		return ToolSearch{Mode: ToolSearchOn}, nil
	case !hasN && mode == "auto":
		return ToolSearch{Mode: ToolSearchAuto, Threshold: DefaultToolSearchThreshold}, nil
	case hasN && mode == "auto":
		if v, err := strconv.ParseUint(n, 10, 31); err == nil {
			return ToolSearch{Mode: ToolSearchAuto, Threshold: int(v)}, nil
		}
	}
	return ToolSearch{}, fmt.Errorf("tool search %q: %w", s, ErrToolSearchMode)
}

// String returns the setting as ParseToolSearch reads it.
func (t ToolSearch) String() string {
	switch t.Mode {
	case ToolSearchOn:
		return "on"
	case ToolSearchAuto:
		return "auto:" + strconv.Itoa(t.Threshold)
	}
	return "off"
}

// Enabled reports whether tool search is on while exposed tools are.
func (t ToolSearch) Enabled(exposed int) bool {
	return t.Mode == ToolSearchOn || t.Mode == ToolSearchAuto && exposed > t.Threshold
}
