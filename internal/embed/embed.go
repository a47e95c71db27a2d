// Package embed is a client of an OpenAI-compatible embedding endpoint
// (OpenAI's API, a local Ollama, llama.cpp's server): it turns texts into
// vectors, and does nothing else.
//
// A request is POST {base}/embeddings with {"model": M, "input": [texts]};
// the answer's data[i].embedding is the vector of input[index]. Everything
// is bounded: texts per request ([MaxBatch]), bytes per text
// ([MaxTextBytes], cut between words), the answer's size
// ([MaxResponseBytes]) and dimensions ([MaxDimensions]), and the time of one
// request ([DefaultTimeout]).
//
// The API key goes to the configured URL only: a redirect is never
// followed. It never appears in an error; errors name the endpoint as
// scheme://host/path, without query or user information.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxBatch is the most texts one request carries; [Client.Embed] sends more
// in several requests.
const MaxBatch = 64

// MaxTextBytes is the most of a text sent: its first words within it. A
// tool's name and description say what it does well before this.
const MaxTextBytes = 2048

// MaxResponseBytes bounds the body of an answer that is read: 64 vectors
// of MaxDimensions floats written in full JSON fit well within it.
const MaxResponseBytes = 32 << 20

// MaxDimensions is the most dimensions a vector may have; a larger one is
// refused as an error of the endpoint's.
const MaxDimensions = 8192

// DefaultTimeout bounds one request when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxErrorBody is how much of an error answer's body an error quotes.
const maxErrorBody = 200

// ErrBadResponse means the endpoint answered, but not with what was asked:
// a status other than 200, a body that is not the expected JSON, too many
// or too few vectors, or vectors of the wrong size. The error says which.
var ErrBadResponse = errors.New("bad response")

// ErrRedirect means the endpoint answered with a redirect, which is never
// followed (the key would go where the config did not say).
var ErrRedirect = errors.New("redirect not followed")

// Options configure a [Client]. A nil *Options means all defaults.
type Options struct {
	// Transport carries the requests. Nil: a transport of the client's
	// own, like http.DefaultTransport ([Client.CloseIdleConnections]
	// closes its connections).
	Transport http.RoundTripper
	// Timeout bounds one request, the body read included. Default:
	// DefaultTimeout.
	Timeout time.Duration
}

// Client asks one endpoint for one model's vectors. It is safe for
// concurrent use. Use [New].
type Client struct {
	url      string // the full URL of the embeddings resource
	endpoint string // url without query or user information, for errors
	model    string
	key      string
	timeout  time.Duration
	http     *http.Client
	maxBody  int64 // MaxResponseBytes; smaller in tests
}

// New returns a client of the endpoint whose API base is baseURL (such as
// "http://localhost:11434/v1"; "/embeddings" is appended), for model, that
// sends key as a bearer token ("" sends none). It does no I/O. It fails if
// baseURL is not an absolute http or https URL, or model is empty.
func New(baseURL, model, key string, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embed: new: the URL %q is not an absolute http or https URL", redact(u, baseURL))
	}
	if strings.TrimSpace(model) == "" {
		return nil, errors.New("embed: new: the model is empty")
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	u = u.JoinPath("embeddings")
	c := &Client{url: u.String(), endpoint: redact(u, ""), model: model, key: key, timeout: o.Timeout, maxBody: MaxResponseBytes}
	c.http = &http.Client{
		Transport: o.Transport,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("%w: to %s", ErrRedirect, redact(req.URL, ""))
		},
	}
	return c, nil
}

// redact returns u as scheme://host/path, or fallback if u is nil.
func redact(u *url.URL, fallback string) string {
	if u == nil {
		return fallback
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// Endpoint returns the URL requests go to, without query or user
// information: what errors and logs name.
func (c *Client) Endpoint() string { return c.endpoint }

// CloseIdleConnections closes the connections the client keeps open
// between requests: call it when done with the client.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Model returns the model's name.
func (c *Client) Model() string { return c.model }

// Embed returns the vectors of texts, in their order, in requests of at
// most MaxBatch texts each, one after the other; each text is cut to its
// first words within MaxTextBytes. Every vector has the dimensions of the
// first. An error names the endpoint and what was wrong, and wraps
// [ErrBadResponse] or [ErrRedirect] when the endpoint answered wrongly, or
// ctx's error.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += MaxBatch {
		vecs, err := c.batch(ctx, texts[start:min(start+MaxBatch, len(texts))])
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(vecs[0]) != len(out[0]) {
			return nil, fmt.Errorf("embed: %s: %w: vectors of %d dimensions after ones of %d", c.endpoint, ErrBadResponse, len(vecs[0]), len(out[0]))
		}
		out = append(out, vecs...)
	}
	return out, nil
}

type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// batch embeds at most MaxBatch texts in one request.
func (c *Client) batch(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = cutWords(t, MaxTextBytes)
	}
	body, err := json.Marshal(request{Model: c.model, Input: in})
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", c.endpoint, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", c.endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// A *url.Error quotes the URL with its query: keep only the cause.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("embed: %s: %w", c.endpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("embed: %s: reading the answer: %w", c.endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embed: %s: %w: status %d: %q", c.endpoint, ErrBadResponse, resp.StatusCode, c.quote(data))
	}
	if int64(len(data)) > c.maxBody {
		return nil, fmt.Errorf("embed: %s: %w: the answer is over embed.MaxResponseBytes (%d bytes)", c.endpoint, ErrBadResponse, c.maxBody)
	}
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("embed: %s: %w: not the JSON of an embeddings answer (%v): %q", c.endpoint, ErrBadResponse, err, c.quote(data))
	}
	if len(r.Data) != len(texts) {
		return nil, fmt.Errorf("embed: %s: %w: %d vectors for %d texts", c.endpoint, ErrBadResponse, len(r.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, d := range r.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		switch {
		case at < 0 || at >= len(texts):
			return nil, fmt.Errorf("embed: %s: %w: index %d for %d texts", c.endpoint, ErrBadResponse, at, len(texts))
		case out[at] != nil:
			return nil, fmt.Errorf("embed: %s: %w: index %d twice", c.endpoint, ErrBadResponse, at)
		case len(d.Embedding) == 0 || len(d.Embedding) > MaxDimensions:
			return nil, fmt.Errorf("embed: %s: %w: a vector of %d dimensions, want 1 to embed.MaxDimensions (%d)", c.endpoint, ErrBadResponse, len(d.Embedding), MaxDimensions)
		case i > 0 && len(d.Embedding) != len(r.Data[0].Embedding):
			return nil, fmt.Errorf("embed: %s: %w: vectors of %d and %d dimensions in one answer", c.endpoint, ErrBadResponse, len(r.Data[0].Embedding), len(d.Embedding))
		}
		out[at] = d.Embedding
	}
	return out, nil
}

// quote returns what an error quotes of an answer's body: its first
// maxErrorBody bytes, with the key, if the endpoint echoed it (a proxy's
// "invalid key sk-..."), replaced before the cut, so that no part of it
// shows.
func (c *Client) quote(body []byte) string {
	if c.key != "" {
		body = bytes.ReplaceAll(body, []byte(c.key), []byte("[API key]"))
	}
	return prefix(body, maxErrorBody)
}

// prefix returns the first n bytes of b, cut at a rune's start.
func prefix(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}

// cutWords returns s cut to its first words within max bytes: at the last
// space or punctuation at or before max, or at a rune's start if a single
// word is longer.
func cutWords(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	for i := end; i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if unicode.IsSpace(r) || unicode.IsPunct(r) {
			return strings.TrimRightFunc(s[:i], unicode.IsSpace)
		}
		i -= size
	}
	return s[:end]
}
