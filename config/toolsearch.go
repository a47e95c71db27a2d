package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
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
	// Embeddings, if its URL is set, is an OpenAI-compatible embedding
	// endpoint whose vectors add to the ranking of tool search (the
	// config's "toolSearch": {"embeddings": {...}}). `serve --tool-search`
	// overrides the mode only, never this.
	Embeddings Embeddings
}

// Embeddings configure an optional OpenAI-compatible embedding endpoint
// for tool search: POST {URL}/embeddings with {"model": Model, "input":
// [...]}. The zero value is none: the offline ranking alone.
type Embeddings struct {
	// URL is the API's base, absolute http or https, such as
	// "http://localhost:11434/v1" (Ollama).
	URL string
	// Model is the embedding model's name, such as "nomic-embed-text".
	Model string
	// APIKeyEnv is the name of the environment variable that holds the
	// API key, sent as "Authorization: Bearer KEY" to URL only; "" sends
	// none. The key itself is never in a config.
	APIKeyEnv string
}

// ErrToolSearchField means a field of an object "toolSearch" is unknown or
// invalid; the error names it.
var ErrToolSearchField = errors.New("invalid tool search setting")

// envName is what an environment variable's name may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validate returns the field of e that is wrong, and why; the zero value
// is valid (no endpoint).
func (e Embeddings) validate() (field string, err error) {
	if e == (Embeddings{}) {
		return "", nil
	}
	u, perr := url.Parse(e.URL)
	switch {
	case e.URL == "":
		return "url", fmt.Errorf("%w: missing", ErrToolSearchField)
	case perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "url", fmt.Errorf("%w: want an absolute http or https URL, such as \"http://localhost:11434/v1\"", ErrToolSearchField)
	case u.User != nil:
		return "url", fmt.Errorf("%w: the URL has a user or password; put the key in the variable apiKeyEnv names", ErrToolSearchField)
	case strings.TrimSpace(e.Model) == "":
		return "model", fmt.Errorf("%w: missing or empty; want the embedding model's name", ErrToolSearchField)
	case e.APIKeyEnv != "" && !envName.MatchString(e.APIKeyEnv):
		return "apiKeyEnv", fmt.Errorf("%w: want the name of an environment variable (letters, digits, _), not a key", ErrToolSearchField)
	}
	return "", nil
}

// Validate reports whether e is usable: an absolute http(s) URL without
// credentials, a model, and an apiKeyEnv that names a variable. The zero
// value (no endpoint) is valid.
func (e Embeddings) Validate() error {
	field, err := e.validate()
	if err != nil {
		return fmt.Errorf("embeddings.%s: %w", field, err)
	}
	return nil
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
