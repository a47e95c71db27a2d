package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/shell"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/switchboard-mcp/switchboard/config"
)

// ErrLoginRequired means that a server asks for a login that no stored
// token answers: none was stored, its refresh was refused, or the server
// wants more scopes than it grants.
var ErrLoginRequired = errors.New("login required")

// refreshMargin is how long before its expiry a token is refreshed, so
// that a request never leaves with one that expires on the way.
const refreshMargin = time.Minute

// Options configure a Handler. Without the server's fields, they are a
// template that [Options.For] completes for each server: those of one
// Manager share a store.
type Options struct {
	// Server is the server's configured name, URL its MCP endpoint
	// (resolved) and OAuth its "oauth" object (resolved; may be nil).
	Server string
	URL    string
	OAuth  *config.OAuth
	// Config is the file that configures the server, for the command
	// line of a LoginError.
	Config string
	// Store keeps the tokens.
	Store *Store
	// HTTPClient makes the metadata, registration and token requests.
	// Default: http.DefaultClient.
	HTTPClient *http.Client
	// Logger hears of a token that could not be saved. Default: discard.
	Logger *slog.Logger

	// Login, if set, runs the authorization code flow when the server asks
	// for a login, and RedirectURL is where the flow's redirect goes (see
	// LoopbackLogin). Without Login, a server that asks for a login the
	// store cannot answer fails with ErrLoginRequired.
	Login       auth.AuthorizationCodeFetcher
	RedirectURL string
	// ClientMetadataURL, if set, is the URL of this client's metadata
	// document, for authorization servers that accept one as a client ID.
	ClientMetadataURL string
	// Scopes, with Login, are scopes to ask for besides those the config
	// or the server names (a step-up's), and make the login a fresh one:
	// the stored token is not used.
	Scopes []string
}

// A Handler authorizes the requests to one server (it is the go-sdk
// transport's [auth.OAuthHandler]): with the stored token, refreshed before
// it expires and once when the server answers 401; concurrent refreshes
// are one.
type Handler struct {
	opts  Options
	key   string
	login *auth.AuthorizationCodeHandler // nil without Options.Login

	mu     sync.Mutex
	loaded bool               // the store was read
	stamp  string             // the stamp of the record as last read or written: see Store.Stamp
	rec    *Record            // the record ts serves, as last saved or loaded
	ts     oauth2.TokenSource // nil until there is a record
	// earlyRefreshed and awaitingRefresh, if set (by tests), are called
	// after each early refresh is stored, and as a refused request begins
	// to wait for a refresh.
	earlyRefreshed, awaitingRefresh func()
}

var _ auth.OAuthHandler = (*Handler)(nil)

// For returns o completed for srv, a resolved http or sse server.
func (o Options) For(srv *config.Server) Options {
	o.Server, o.URL, o.OAuth, o.Config = srv.Name, srv.URL, srv.OAuth, srv.Source
	return o
}

// NewHandler returns the handler of a server.
func NewHandler(opts Options) (*Handler, error) {
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{opts: opts, key: Key(opts.Server, opts.URL)}
	if opts.Login != nil {
		login, err := auth.NewAuthorizationCodeHandler(h.loginConfig())
		if err != nil {
			return nil, fmt.Errorf("oauth: server %q: %w", opts.Server, err)
		}
		h.login = login
	}
	return h, nil
}

// loginConfig is the configuration of go-sdk's flow: a pre-registered
// client if the config names one, else a metadata document or dynamic
// registration, whichever the authorization server takes; the configured
// scopes, else those the server names; a refresh token where offered; and
// every token it grants goes to the store.
func (h *Handler) loginConfig() *auth.AuthorizationCodeHandlerConfig {
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              h.opts.RedirectURL,
		AuthorizationCodeFetcher: h.opts.Login,
		RequestRefreshToken:      true,
		Client:                   h.opts.HTTPClient,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:   "switchboard",
			RedirectURIs: []string{h.opts.RedirectURL},
			GrantTypes:   []string{"authorization_code", "refresh_token"},
		}},
		NewTokenSource: func(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			rec := &Record{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.Endpoint.TokenURL,
				AuthStyle: cfg.Endpoint.AuthStyle, Scopes: slices.Clone(cfg.Scopes), Token: tok}
			if h.configured(rec) {
				rec.ClientSecret = "" // the config's, which stays there
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if err := h.opts.Store.Save(h.key, rec); err != nil {
				return nil, err
			}
			h.saved()
			h.use(rec)
			return h.ts, nil
		},
	}
	if h.opts.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.opts.ClientMetadataURL}
	}
	if o := h.opts.OAuth; o != nil {
		if o.ClientID != "" {
			cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
			if o.ClientSecret != "" {
				cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
			}
		}
	}
	// The configured scopes replace those the server names; a step-up's
	// add to either.
	var configured []string
	if o := h.opts.OAuth; o != nil {
		configured = o.Scopes
	}
	if extra := h.opts.Scopes; len(configured) > 0 || len(extra) > 0 {
		cfg.ScopeFilter = func(named []string) []string {
			out := slices.Clone(named)
			if len(configured) > 0 {
				out = slices.Clone(configured)
			}
			for _, s := range extra {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return cfg
}

// configured reports whether rec's client is the one the config names.
func (h *Handler) configured(rec *Record) bool {
	return h.opts.OAuth != nil && h.opts.OAuth.ClientID != "" && rec.ClientID == h.opts.OAuth.ClientID
}

// config is the oauth2 configuration that refreshes rec's token: with the
// configured client's secret, which the store never holds.
func (h *Handler) config(rec *Record) *oauth2.Config {
	cfg := rec.config()
	if h.configured(rec) {
		cfg.ClientSecret = h.opts.OAuth.ClientSecret
	}
	return cfg
}

// use makes rec the record that the token source serves. h.mu is held.
func (h *Handler) use(rec *Record) {
	h.rec = rec
	src := &savingSource{h: h}
	src.base = &earlySource{cfg: h.config(rec), client: h.opts.HTTPClient, tok: rec.Token, margin: margin(rec.Token),
		refreshed: func(tok *oauth2.Token) {
			h.saveIfNew(src, tok)
			if h.earlyRefreshed != nil {
				h.earlyRefreshed()
			}
		}}
	h.ts = src
}

// margin is how long before tok's expiry it is refreshed: refreshMargin,
// or half its lifetime for a token that lives less than two margins, which
// would otherwise be refreshed for every request.
func margin(tok *oauth2.Token) time.Duration {
	if tok.ExpiresIn > 0 {
		return min(refreshMargin, time.Duration(tok.ExpiresIn)*time.Second/2)
	}
	return refreshMargin
}

// TokenSource returns the source of the server's tokens, or nil while it
// has none (its requests then go without one, and a server that wants one
// says so with a 401).
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.loaded || h.opts.Store.Stamp(h.key) != h.stamp {
		// A login or logout since, by another process, counts at once:
		// a forgotten token is not used, nor resurrected by a refresh.
		rec, err := h.load()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			h.rec, h.ts = nil, nil
		} else {
			h.adopt(rec)
		}
	}
	return h.ts, nil
}

// adopt makes rec, just read from the store, the record served, unless its
// token is the one served already (a source in use keeps its state). It
// reports whether the record changed. h.mu is held.
func (h *Handler) adopt(rec *Record) bool {
	if h.rec != nil && rec.Token.AccessToken == h.rec.Token.AccessToken {
		return false
	}
	h.use(rec)
	return true
}

// Authorize answers a 401 or 403 from the server. A login stored since
// (by switchboard login, in another process) is used at once; else the
// token is refreshed, once; else, with Options.Login, the whole flow runs;
// else the server needs a login: ErrLoginRequired. A 403 that is not for
// want of scopes is the server's answer, not ours to change.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if h.login != nil {
		return h.loginFailed(h.login.Authorize(ctx, req, resp))
	}
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	bearer := slices.IndexFunc(challenges, func(c oauthex.Challenge) bool { return strings.EqualFold(c.Scheme, "bearer") })
	if resp.StatusCode == http.StatusForbidden {
		if bearer < 0 || challenges[bearer].Params["error"] != "insufficient_scope" {
			return nil // the server's answer, not ours to change
		}
		// Step-up: this request needs more than the login granted. Only
		// a new login, which asks for them, can get them.
		return &LoginError{Server: h.opts.Server, Config: h.opts.Config, Scopes: strings.Fields(challenges[bearer].Params["scope"]),
			Reason: "it asks for more scopes than the login granted"}
	}
	if bearer < 0 {
		return fmt.Errorf("oauth: the server refused the request (%s) without an OAuth challenge: check its credentials in the config", resp.Status)
	}
	h.mu.Lock()
	stored, err := h.load()
	switch {
	case err != nil:
		h.mu.Unlock()
		return err
	case stored == nil:
		h.rec, h.ts = nil, nil
		h.mu.Unlock()
		return h.needsLogin("no login is stored")
	}
	if h.adopt(stored) {
		h.mu.Unlock()
		return nil // a new login, or a refresh by another process: try it
	}
	if sent := req.Header.Get("Authorization"); sent != "" && sent != "Bearer "+h.rec.Token.AccessToken {
		h.mu.Unlock()
		return nil // a newer token than the one refused, from a concurrent refresh: try it
	}
	// The current token was refused, or could not be refreshed before the
	// request (which then went without one).
	if h.rec.Token.RefreshToken == "" {
		h.mu.Unlock()
		return h.needsLogin("its token was refused, and there is no refresh token")
	}
	f := h.ts.(*savingSource).base.(*earlySource).refreshNow()
	h.mu.Unlock()
	if h.awaitingRefresh != nil {
		h.awaitingRefresh()
	}
	select {
	case <-f.done:
		return h.refreshFailed(f.err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refreshFailed is what the refresh of a refused token that ended with err
// means for its request: nil, to try the refreshed token; a login needed;
// or an authorization server that is down.
func (h *Handler) refreshFailed(err error) error {
	var re *oauth2.RetrieveError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re) && (re.ErrorCode != "" || re.Response != nil && re.Response.StatusCode < 500):
		return h.needsLogin("the refresh of its token was refused: " + refreshError(err))
	default:
		// The authorization server is down: the requests fail, and the
		// login stands.
		return fmt.Errorf("oauth: the token of %s could not be refreshed: %s", h.opts.Server, refreshError(err))
	}
}

// load reads the server's record from the store, and notes its stamp.
// h.mu is held.
func (h *Handler) load() (*Record, error) {
	stamp := h.opts.Store.Stamp(h.key)
	rec, err := h.opts.Store.Load(h.key, h.opts.Server)
	if err != nil {
		return nil, err
	}
	h.loaded, h.stamp = true, stamp
	switch {
	case h.login != nil && len(h.opts.Scopes) > 0:
		return nil, nil // a fresh login, for more scopes
	case rec != nil && h.opts.OAuth != nil && h.opts.OAuth.ClientID != "" && !h.configured(rec):
		return nil, nil // made with another client than the config names now
	}
	return rec, nil
}

// saved notes that the server's record was just written. h.mu is held.
func (h *Handler) saved() {
	h.loaded, h.stamp = true, h.opts.Store.Stamp(h.key)
}

// loginFailed says what the flow's error means for the user, if it is one
// whose fix is in their hands: a server that registers no clients, or
// publishes no metadata to find its registration at, needs a client
// registered beforehand, named in the config.
func (h *Handler) loginFailed(err error) error {
	var re *oauth2.RetrieveError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		// The token endpoint's answer may repeat the code and the
		// verifier: say only its error code.
		return fmt.Errorf("oauth: logging in to %s: the authorization server refused the code: %s", h.opts.Server, refreshError(re))
	case strings.Contains(err.Error(), "failed to register client") && (h.opts.OAuth == nil || h.opts.OAuth.ClientID == ""):
		return fmt.Errorf("%w (the authorization server takes no client registration, or publishes no metadata: register a client with it, and set its oauth.clientId in the config of %s)", err, h.opts.Server)
	}
	return err
}

// refreshed returns the record with tok, the refresh of its token, and
// stores it. h.mu is held. A store that fails costs a refresh at the next
// start, not this request.
func (h *Handler) refreshed(tok *oauth2.Token) *Record {
	rec := *h.rec
	rec.Token = tok
	if h.opts.Store.Stamp(h.key) != h.stamp {
		return &rec // logged out, or in again, meanwhile: the store's word wins
	}
	if err := h.opts.Store.Save(h.key, &rec); err != nil {
		h.opts.Logger.Warn("oauth: the refreshed token could not be saved; the next start will refresh again", "server", h.opts.Server, "error", err)
	} else {
		h.saved()
	}
	return &rec
}

// needsLogin says that the server needs a login, and why.
func (h *Handler) needsLogin(why string) error {
	return &LoginError{Server: h.opts.Server, Config: h.opts.Config, Reason: why}
}

// A LoginError says that a server needs a login, why, and what to run. It
// wraps ErrLoginRequired.
type LoginError struct {
	Server string // the configured name
	Config string // the config file that names it, if known
	Reason string
	// Scopes, for a step-up, are those the request needs: the login has
	// to ask for them. The session stands for the other requests.
	Scopes []string
}

func (e *LoginError) Error() string {
	return fmt.Sprintf("%v: %s; run: %s", ErrLoginRequired, e.Reason, e.Command())
}

func (e *LoginError) Unwrap() error { return ErrLoginRequired }

// Command is the command line that logs in to the server.
func (e *LoginError) Command() string {
	return LoginCommand(e.Server, e.Config, e.Scopes)
}

// LoginCommand is the command line that logs in to the server called name,
// from the config file config ("" or the embedded default's: none given),
// asking for scopes.
func LoginCommand(name, config string, scopes []string) string {
	cmd := shell.Command("login", []string{config}, name)
	if len(scopes) > 0 {
		cmd += " --scopes " + shell.Quote(strings.Join(scopes, ","))
	}
	return cmd
}

// refreshError describes a failed refresh by the authorization server's
// error code alone: its response body is not ours to repeat.
func refreshError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return re.ErrorCode
		}
		if re.Response != nil {
			return re.Response.Status
		}
	}
	return "the token endpoint could not be reached"
}

// scrubbed is a failed refresh without the authorization server's response
// body, which its message would repeat: what a request that could not be
// authorized returns. It stays an *oauth2.RetrieveError with the same
// error code, which go-sdk's transport reads (invalid_grant: go without a
// token, and let the server's 401 ask for a login).
func scrubbed(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return fmt.Errorf("oauth: refreshing the token: %w", err)
	}
	out := &oauth2.RetrieveError{ErrorCode: re.ErrorCode, Response: &http.Response{Status: "no response"}}
	if re.Response != nil {
		out.Response = &http.Response{Status: re.Response.Status, StatusCode: re.Response.StatusCode}
	}
	return out
}

// An earlySource serves a token and refreshes it before it expires: once
// it is within margin of its expiry, the first request to see it starts
// the refresh and, like every request meanwhile, goes on with the token in
// hand, which is still good, so that a slow authorization server holds up
// no request (oauth2.ReuseTokenSource would hold every one behind its
// lock). Only a request whose token has expired waits for the refresh.
// One refresh at a time, within refreshTimeout; a refresh that fails is
// tried again by the next request after earlyRetry.
type earlySource struct {
	cfg    *oauth2.Config
	client *http.Client
	margin time.Duration
	// refreshed is told each token refreshed, without the lock: it is
	// stored at once, for the authorization server may have replaced the
	// refresh token.
	refreshed func(*oauth2.Token)

	mu      sync.Mutex
	tok     *oauth2.Token
	flight  *tokenFlight // the refresh in progress, if any
	retryAt time.Time    // no early refresh before, after one failed
}

// A tokenFlight is one refresh, which the requests that wait for it share.
type tokenFlight struct {
	done chan struct{} // closed when tok and err are set
	tok  *oauth2.Token
	err  error
}

// refreshTimeout bounds a refresh.
const refreshTimeout = time.Minute

// earlyRetry is how long an early refresh that failed waits before the next.
const earlyRetry = 5 * time.Second

func (s *earlySource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	tok, now := s.tok, time.Now()
	good := tok.AccessToken != "" && (tok.Expiry.IsZero() || now.Before(tok.Expiry))
	if good && (tok.Expiry.IsZero() || now.Add(s.margin).Before(tok.Expiry) || now.Before(s.retryAt)) {
		s.mu.Unlock()
		return tok, nil
	}
	f := s.flightLocked()
	s.mu.Unlock()
	if good {
		return tok, nil // still good while the refresh goes on
	}
	<-f.done // bounded by refreshTimeout
	return f.tok, f.err
}

// refreshNow returns the refresh in progress, or starts one: for a token
// that the server refused, which requests share with an early refresh.
func (s *earlySource) refreshNow() *tokenFlight {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flightLocked()
}

// flightLocked returns the refresh in progress, or starts one. s.mu is
// held.
func (s *earlySource) flightLocked() *tokenFlight {
	if s.flight == nil {
		s.flight = &tokenFlight{done: make(chan struct{})}
		go s.refresh(s.flight, s.tok)
	}
	return s.flight
}

// refresh refreshes old, for f. It outlives the requests that wait for it,
// so that one that gives up leaves it to the others, within
// refreshTimeout.
func (s *earlySource) refresh(f *tokenFlight, old *oauth2.Token) {
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, s.client), refreshTimeout)
	defer cancel()
	expired := *old
	expired.Expiry = time.Unix(1, 0)
	f.tok, f.err = s.cfg.TokenSource(ctx, &expired).Token()
	s.mu.Lock()
	s.flight = nil
	if f.err == nil {
		s.tok = f.tok
	} else {
		s.retryAt = time.Now().Add(earlyRetry)
	}
	s.mu.Unlock()
	if f.err == nil {
		s.refreshed(f.tok)
	}
	close(f.done)
}

// savingSource saves each new token to the store as the server's record.
type savingSource struct {
	h    *Handler
	base oauth2.TokenSource
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.base.Token()
	if err != nil {
		return nil, scrubbed(err)
	}
	s.h.saveIfNew(s, tok)
	return tok, nil
}

// saveIfNew stores tok, if it is new and src is still the handler's source.
func (h *Handler) saveIfNew(src *savingSource, tok *oauth2.Token) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts != oauth2.TokenSource(src) || h.rec == nil || h.rec.Token.AccessToken == tok.AccessToken {
		return
	}
	h.rec = h.refreshed(tok)
}
