//lint:file-ignore SA1019 Switchboard forwards roots and logging for as long as servers and clients use them.

package upstream

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refreshDelay bounds how long a reconnect waits for a first answer before
// it lists again.
const refreshDelay = 100 * time.Millisecond

// settle brings a fresh session up to date, best effort: its lists, and the
// resources the host subscribed to. After a reconnect, the calls that
// waited for the session go first: the lists wait for the first answer, or
// a moment.
func (ls *listSet) settle(ctx context.Context, s *session) {
	defer ls.loadedOnce.Do(func() { close(ls.loaded) })
	if s.listed {
		ls.fetched[Tools].Store(s.toolsGen)
		ls.setExpiry(Tools, s.toolsTTL)
		ls.loadAll(ctx, s, Prompts, Resources)
	} else {
		t := time.NewTimer(refreshDelay)
		defer t.Stop()
		select {
		case <-s.answered:
		case <-t.C:
		case <-s.lost:
			return
		case <-ctx.Done():
			return
		}
		ls.loadAll(ctx, s, Tools, Prompts, Resources)
	}
	ls.resubscribe(ctx, s)
}

// resubscribe subscribes a new session to every resource the host
// subscribed to, and restores its logging level. It runs once per session,
// whatever kind of reconnect made it: a list_changed never sends the
// subscriptions again.
func (ls *listSet) resubscribe(ctx context.Context, s *session) {
	ls.mu.Lock()
	level := ls.logLevel
	var uris []string
	for uri := range ls.subs {
		uris = append(uris, uri)
	}
	ls.mu.Unlock()
	if err := ls.applyLevel(ctx, s, level); err != nil && ctx.Err() == nil {
		ls.log.Info("setting the logging level failed", "server", ls.red.name, "error", ls.red.redact(err.Error()))
	}
	if caps := s.capabilities(); caps.Resources == nil || !caps.Resources.Subscribe {
		return
	}
	serial := ls.settings.Load().serial
	for _, uri := range uris {
		if !ls.claim(s, uri) {
			continue // subscribed meanwhile
		}
		err := serially(ctx, serial, func() error { return s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) })
		if err != nil {
			ls.unclaim(s, uri)
			if ctx.Err() != nil {
				return
			}
			ls.log.Info("resubscribing failed", "uri", uri, "error", ls.red.redact(err.Error()))
		}
	}
}

// resourceUpdated publishes notifications/resources/updated for a
// subscribed resource; others are ignored.
func (ls *listSet) resourceUpdated(uri string) {
	if ls.wanted(uri) {
		ls.publish(Event{Kind: EventResourceUpdated, URI: uri})
	}
}

// claim marks uri as subscribed on s, and reports whether it was not
// already: whoever claims a subscription sends it, once per session.
func (ls *listSet) claim(s *session, uri string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if s.subs[uri] {
		return false
	}
	if s.subs == nil {
		s.subs = make(map[string]bool)
	}
	s.subs[uri] = true
	return true
}

// unclaim forgets that uri is subscribed on s.
func (ls *listSet) unclaim(s *session, uri string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	delete(s.subs, uri)
}

// wanted reports whether the host is subscribed to uri.
func (ls *listSet) wanted(uri string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.subs[uri]
}

// want records that the host subscribes to uri, and reports whether it
// was already.
func (ls *listSet) want(uri string) (had bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	had = ls.subs[uri]
	ls.subs[uri] = true
	return had
}

// unwant records that the host no longer subscribes to uri, and reports
// whether it did.
func (ls *listSet) unwant(uri string) (had bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	had = ls.subs[uri]
	delete(ls.subs, uri)
	return had
}

// subscribeOn subscribes s to uri, unless it is already, and undoes it if
// the host unsubscribed meanwhile.
func (ls *listSet) subscribeOn(ctx context.Context, s *session, uri string) error {
	if caps := s.capabilities(); caps.Resources == nil || !caps.Resources.Subscribe {
		return ErrNotSupported
	}
	if ls.claim(s, uri) {
		if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			ls.unclaim(s, uri)
			return err
		}
	}
	if !ls.wanted(uri) {
		// Unsubscribed while this was in flight: roll it back.
		ls.unclaim(s, uri)
		return s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	}
	return nil
}

// unsubscribeOn ends the subscription of s to uri.
func (ls *listSet) unsubscribeOn(ctx context.Context, s *session, uri string) error {
	ls.unclaim(s, uri)
	return s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
}

// setLevel records the logging level the host asks for.
func (ls *listSet) setLevel(level mcp.LoggingLevel) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.logLevel = string(level)
}

// level returns the logging level the host asked for, or "".
func (ls *listSet) level() mcp.LoggingLevel {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return mcp.LoggingLevel(ls.logLevel)
}

// applyLevel sends level to the server of s, if it logs.
func (ls *listSet) applyLevel(ctx context.Context, s *session, level string) error {
	if caps := s.capabilities(); caps.Logging == nil || level == "" {
		return nil
	}
	err := serially(ctx, ls.settings.Load().serial, func() error {
		return s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
	})
	if err != nil {
		return ls.red.wrap(label{"set logging level", level}.String(), err)
	}
	return nil
}
