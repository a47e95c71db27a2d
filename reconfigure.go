package switchboard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-mcp/switchboard/config"
	"github.com/switchboard-mcp/switchboard/internal/upstream"
)

// A Reconfiguration says what [Manager.Reconfigure] did, by server name.
type Reconfiguration struct {
	Added, Removed, Changed []string
	// Kept are entries of the new config that it rejected, whose server
	// runs on as it was: a broken edit never stops a working server.
	Kept []config.Rejected
	// Rejected are the other entries it rejected: new ones, shown as
	// failed with their error.
	Rejected []config.Rejected
}

// Reconfigure applies cfg, a new version of the config, as a diff: a server
// that is new connects, in the background; one that is gone is closed; one
// whose entry changed takes the change (see the upstream's rules: a change
// that only the manager uses, such as a prefix or a filter, reconnects
// nothing); an untouched one keeps its process, its session and its calls
// in flight. The processes that client sessions have of a server (config
// processPerSession) follow it: closed with it, or when the change disables
// it or ends processPerSession, and otherwise taking the change as it
// does. An entry that cfg rejects keeps the running server of that name as
// it was, if any, and is otherwise shown as failed with its error.
// The views change once, and subscribers hear of what changed, with
// EventChanged only when the exposed names did, before Reconfigure
// returns (see [Manager.Connect]). A removed server is not heard of again:
// one that exposed nothing leaves no event.
func (m *Manager) Reconfigure(ctx context.Context, cfg *config.Config) (Reconfiguration, error) {
	var r Reconfiguration
	ctx, unlock, err := m.lock(ctx, "reconfigure")
	if err != nil {
		return r, err
	}
	defer unlock()
	prev := m.view.Load()
	set := &serverSet{byName: make(map[string]*upstream.Upstream), added: make(map[string]upstream.Snapshot), toolSearch: cfg.ToolSearch}
	var changed, started []*upstream.Upstream
	changes := make(map[*upstream.Upstream]config.Server)
	keep := func(up *upstream.Upstream) {
		set.servers = append(set.servers, up)
		set.byName[up.Name()] = up
	}
	seen := make(map[string]bool)
	for _, srv := range cfg.Servers {
		if seen[srv.Name] {
			continue
		}
		seen[srv.Name] = true
		old := prev.byName[srv.Name]
		if err := srv.Validate(); err != nil {
			rejected := config.Rejected{Name: srv.Name, Source: srv.Source, Required: srv.Required, Err: err}
			if old != nil {
				keep(old)
				r.Kept = append(r.Kept, rejected)
			} else {
				set.rejected = append(set.rejected, rejected)
				r.Rejected = append(r.Rejected, rejected)
			}
			continue
		}
		var oldCfg config.Server
		if old != nil {
			oldCfg = old.Config()
		}
		switch {
		case old == nil:
			m.readNotes(srv.Name, srv.Fingerprint())
			up := m.newUpstream(srv)
			keep(up)
			set.added[srv.Name] = up.Snapshot()
			started = append(started, up)
			r.Added = append(r.Added, srv.Name)
		case oldCfg.Fingerprint() != srv.Fingerprint() || oldCfg.Pinning != srv.Pinning:
			m.readNotes(srv.Name, srv.Fingerprint())
			keep(old)
			changed = append(changed, old)
			changes[old] = srv
			r.Changed = append(r.Changed, srv.Name)
		default:
			keep(old)
		}
	}
	for _, rej := range cfg.Rejected {
		if seen[rej.Name] {
			continue
		}
		seen[rej.Name] = true
		if old := prev.byName[rej.Name]; old != nil {
			keep(old)
			r.Kept = append(r.Kept, rej)
		} else {
			set.rejected = append(set.rejected, rej)
			r.Rejected = append(r.Rejected, rej)
		}
	}
	var removed []*upstream.Upstream
	for _, up := range prev.servers {
		if set.byName[up.Name()] != up {
			removed = append(removed, up)
			r.Removed = append(r.Removed, up.Name())
			delete(m.held, up)
		}
	}

	// The new set first, so that the events of what follows find it.
	m.pins.configure(cfg, m.opts.Pinning, m.opts.LookupEnv)
	m.events.reset(set)
	ending := removed
	for _, up := range changed {
		srv := changes[up]
		up.Reconfigure(srv)
		if up.State() == upstream.Disconnected && !m.held[up] {
			up.Start(nil) // enabled again
		}
		if srv.ProcessPerSession && srv.IsEnabled() {
			for _, own := range m.perSession.ofServer(up.Name()) {
				own.Reconfigure(srv)
			}
		} else {
			ending = append(ending, m.perSession.take(up.Name())...)
		}
	}
	for _, up := range started {
		if up.State() != upstream.Disabled {
			up.Start(nil)
		}
	}
	for _, up := range removed {
		ending = append(ending, m.perSession.take(up.Name())...)
	}
	err = errors.Join(closeAll(ending, time.Now().Add(m.opts.CloseTimeout))...)
	m.told(ctx)
	if err != nil {
		return r, fmt.Errorf("reconfigure: closing the servers and processes it ends: %w", err)
	}
	return r, nil
}
