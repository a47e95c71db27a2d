// Package hydratest runs a real OAuth 2.0 authorization server, Ory Hydra
// v2.3.0, for tests: the issuer whose tokens the gateway's token checks
// are tested against. Only tests import it.
//
// [Start] runs `hydra serve all --dev` as a child process of the test, with
// an in-memory database, JWT access tokens and its public and admin APIs on
// free loopback ports, and stops it when the test ends:
//
//	h := hydratest.Start(t)                      // ready, with an ES256 signing key
//	id, secret := h.Client(t, "alice", []string{"mcp:read"}, []string{aud})
//	token := h.Token(t, id, secret, []string{"mcp:read"}, aud)   // a JWT, iss = h.Issuer()
//	kid := h.RotateKey(t)                        // new tokens are signed by kid
//	h.Introspect(t, opaque)                      // RFC 7662, for OpaqueTokens clients
//
// The binary is .ci/bin/hydra under the module root, or hydra on PATH;
// `.ci/install-hydra` builds it (about 2 minutes the first time). Where it
// is missing, a test that calls Start skips, saying so; with
// SWITCHBOARD_HYDRA=require (as in CI) it fails instead.
//
// What Hydra's tokens look like: `typ` is "JWT" (not "at+jwt"), `aud` is a
// list, the scopes are a list in `scp`, and `sub` and `client_id` are the
// client's ID. A token carries only the scopes and audience it asked for.
// Hydra signs with the newest key of its access-token key set and keeps
// the older keys in its JWKS. Its admin API has no authentication, so it
// listens on 127.0.0.1 only.
package hydratest
