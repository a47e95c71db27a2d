package switchboard

import (
	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/catalog"
)

// ForTool returns cfg with only the servers that may own the public tool
// name (see [Tool]): those whose prefix the name starts with, and the
// enabled ones without a prefix; and with the rejected entries it would
// belong to, so that a call's error can say why their tools are missing.
// When the prefixes of two enabled servers fit, the prefix does not tell,
// and it returns cfg whole. A manager of the result starts no server that
// a call of the tool does not need, so one that hangs costs nothing; a
// name that fits no server starts none.
//
// cfg is not modified; the result shares its servers' fields.
func ForTool(cfg *config.Config, name string) *config.Config {
	if cfg == nil {
		return nil
	}
	var fit []config.Server
	enabledFit := 0
	for _, s := range cfg.Servers {
		switch prefix := catalog.NamePrefix(s.PublicPrefix()); {
		case prefix == "" && s.IsEnabled():
			fit = append(fit, s)
		case prefix != "" && catalog.MayOwn(prefix, name):
			fit = append(fit, s)
			if s.IsEnabled() {
				enabledFit++
			}
		}
	}
	if enabledFit > 1 {
		return cfg
	}
	only := *cfg
	only.Servers = fit
	only.Rejected = nil
	for _, r := range cfg.Rejected {
		// A rejected entry's name is its prefix: its config did not load.
		if catalog.MayOwn(catalog.NamePrefix(r.Name), name) {
			only.Rejected = append(only.Rejected, r)
		}
	}
	return &only
}
