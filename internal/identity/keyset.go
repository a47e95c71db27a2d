package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is the issuer's JWKS, an oidc.KeySet. Unlike go-oidc's
// RemoteKeySet, which refetches for every token whose key id it does not
// know, it refetches at most once per refetch interval (its limiter; the
// first fetch that succeeds does not count), and
// never for a key id it knows whose signature does not verify; it fetches
// in the caller's goroutine, so that nothing outlives a request. A failed
// fetch keeps the keys it had.
type keySet struct {
	url     string
	client  *http.Client
	limiter *fetchLimiter
	sem     chan struct{} // size 1: one fetch at a time

	mu   sync.Mutex // guards the following
	keys []jose.JSONWebKey
	gen  int // incremented by each fetch that succeeds
}

// errKeysUnavailable is the error of a fetch of the JWKS that failed.
var errKeysUnavailable = errors.New("jwks unavailable")

// errUnknownKey is the error for a key id the set lacks, refetched or not.
var errUnknownKey = errors.New("no key of the issuer verifies the signature")

func (k *keySet) cached() ([]jose.JSONWebKey, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.gen
}

// VerifySignature implements oidc.KeySet. go-oidc has checked the
// algorithm against Algorithms before it calls this.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(raw, algorithms)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("malformed jwt")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, gen := k.cached()
	payload, known := verifyWith(jws, kid, keys)
	if payload != nil {
		return payload, nil
	}
	if known {
		return nil, errUnknownKey // a forgery under a known key id: no refetch
	}
	keys, err = k.refetch(ctx, gen)
	if err != nil {
		return nil, err
	}
	if payload, _ := verifyWith(jws, kid, keys); payload != nil {
		return payload, nil
	}
	return nil, errUnknownKey
}

// verifyWith verifies jws with the key of keys named kid (each key if kid is
// ""); known reports whether kid named one.
func verifyWith(jws *jose.JSONWebSignature, kid string, keys []jose.JSONWebKey) (payload []byte, known bool) {
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		known = kid != ""
		if p, err := jws.Verify(&keys[i]); err == nil {
			return p, true
		}
	}
	return nil, known
}

// refetch returns the keys fetched since generation gen, fetching them if
// none was, and if the limiter allows; else the cached ones.
func (k *keySet) refetch(ctx context.Context, gen int) ([]jose.JSONWebKey, error) {
	select {
	case k.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-k.sem }()
	if keys, now := k.cached(); now != gen {
		return keys, nil // another caller fetched meanwhile
	}
	if !k.limiter.allow() {
		keys, _ := k.cached()
		return keys, nil
	}
	keys, err := k.fetch(ctx)
	k.limiter.stamp()
	if err != nil {
		k.limiter.failed(err)
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	k.limiter.succeeded()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen == 0 {
		// The first keys are no refetch: a key the issuer adds right
		// after them (a rotation) is fetched at once.
		k.limiter.forgive()
	}
	k.keys, k.gen = keys, k.gen+1
	return keys, nil
}

// fetch gets the JWKS, skipping keys of a type or algorithm go-jose does
// not support (RFC 7517, section 5).
func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", k.url, resp.Status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxFetchBytes)).Decode(&set); err != nil {
		return nil, fmt.Errorf("GET %s: %w (at most MaxFetchBytes, %d)", k.url, err, MaxFetchBytes)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) == nil && key.Valid() && key.IsPublic() {
			keys = append(keys, key)
		}
	}
	return keys, nil
}
