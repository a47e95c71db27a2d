package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

const key = "sk-test-SECRET"

// fakeEndpoint answers POST /v1/embeddings with, for each input, a vector
// of its length and its first byte, in reverse order with their index.
// It records the requests it got.
type fakeEndpoint struct {
	mu       sync.Mutex
	requests []request
	auth     []string
}

func (f *fakeEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req request
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	for i := len(req.Input) - 1; i >= 0; i-- {
		data = append(data, item{i, []float32{float32(len(req.Input[i])), float32(req.Input[i][0])}})
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

// TestEmbed: vectors come back in the order of the texts, whatever the
// answer's order, in requests of at most MaxBatch texts; a long text is cut
// between words; the key goes as a bearer token.
func TestEmbed(t *testing.T) {
	f := &fakeEndpoint{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := New(srv.URL+"/v1", "m", key, nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, MaxBatch+3)
	var want [][]float32
	for i := range texts {
		texts[i] = fmt.Sprintf("%c text %d", 'a'+i%26, i)
		want = append(want, []float32{float32(len(texts[i])), float32(texts[i][0])})
	}
	texts[1] = strings.Repeat("word ", MaxTextBytes) // cut to "word … word" of 409 words
	want[1] = []float32{409*5 - 1, 'w'}
	got, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vectors (-want +got):\n%s", diff)
	}
	if len(f.requests) != 2 || len(f.requests[0].Input) != MaxBatch || len(f.requests[1].Input) != 3 || f.requests[0].Model != "m" {
		t.Errorf("requests: %d, want 2 of %d and 3 texts for model m", len(f.requests), MaxBatch)
	}
	for _, a := range f.auth {
		if a != "Bearer "+key {
			t.Errorf("Authorization %q, want the bearer key", a)
		}
	}
}

// TestEmbedErrors: each way an endpoint can answer wrongly is an error that
// names the endpoint and what was wrong, never the key or the URL's query.
func TestEmbedErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
		is      error
	}{
		{"status", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "model \"m\" not found, try pulling it first"+strings.Repeat(".", 300), http.StatusNotFound)
		}, `/v1/embeddings: bad response: status 404: "model \"m\" not found, try pulling it first....`, ErrBadResponse},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>hello</html>") },
			`bad response: not the JSON of an embeddings answer`, ErrBadResponse},
		{"count", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"data": [{"index": 0, "embedding": [1, 2]}]}`)
		}, `bad response: 1 vectors for 2 texts`, ErrBadResponse},
		{"index", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 0, "embedding": [1, 2]}]}`)
		}, `bad response: index 0 twice`, ErrBadResponse},
		{"dimensions", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [1, 2, 3]}]}`)
		}, `bad response: vectors of 2 and 3 dimensions in one answer`, ErrBadResponse},
		{"empty vector", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": []}]}`)
		}, `bad response: a vector of 0 dimensions, want 1 to embed.MaxDimensions (8192)`, ErrBadResponse},
		{"too many dimensions", func(w http.ResponseWriter, r *http.Request) {
			v := strings.TrimSuffix(strings.Repeat("0,", MaxDimensions+1), ",")
			io.WriteString(w, `{"data": [{"index": 0, "embedding": [`+v+`]}, {"index": 1, "embedding": [`+v+`]}]}`)
		}, `bad response: a vector of 8193 dimensions`, ErrBadResponse},
		{"huge", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"data": [`+strings.Repeat(" ", 100_000)+`]}`)
		}, `bad response: the answer is over embed.MaxResponseBytes (65536 bytes)`, ErrBadResponse},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://elsewhere.example/steal?token=x", http.StatusTemporaryRedirect)
		}, `redirect not followed: to http://elsewhere.example/steal`, ErrRedirect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c, err := New(srv.URL+"/v1?api-version=QUERYSECRET", "m", key, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.maxBody = 64 << 10
			_, err = c.Embed(context.Background(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
				t.Fatalf("Embed: %v; want %q (%v)", err, tc.want, tc.is)
			}
			if !strings.HasPrefix(err.Error(), "embed: "+srv.URL+"/v1/embeddings: ") {
				t.Errorf("error %q does not start with the endpoint", err)
			}
			if s := err.Error(); strings.Contains(s, "SECRET") || len(s) > 400 {
				t.Errorf("error %q has a secret, or is over 400 bytes", s)
			}
		})
	}
	c, err := New("http://127.0.0.1:1/v1", "m", key, nil) // nothing listens
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(context.Background(), []string{"a"}); err == nil || !strings.HasPrefix(err.Error(), "embed: http://127.0.0.1:1/v1/embeddings: ") || strings.Contains(err.Error(), key) {
		t.Errorf("Embed with the endpoint down: %v", err)
	}
}

// TestRedirectKeepsTheKey: a redirect, even to the same host, is not
// followed, so the key goes nowhere but the configured URL.
func TestRedirectKeepsTheKey(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/embeddings", http.StatusPermanentRedirect)
	}))
	defer srv.Close()
	c, _ := New(srv.URL+"/v1", "m", key, nil)
	if _, err := c.Embed(context.Background(), []string{"a"}); !errors.Is(err, ErrRedirect) {
		t.Errorf("Embed: %v, want ErrRedirect", err)
	}
	if len(elsewhere) != 0 {
		t.Errorf("the redirect was followed: %q", elsewhere)
	}
}

// blockingTransport answers no request: it waits for the request's
// context to end.
type blockingTransport struct{}

func (blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestTimeout: a request that gets no answer ends at Options.Timeout with
// an error that names the endpoint and the deadline.
func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New("http://embed.example/v1", "m", key, &Options{Transport: blockingTransport{}, Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = c.Embed(context.Background(), []string{"a"})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "embed: http://embed.example/v1/embeddings: ") {
			t.Errorf("Embed: %v; want a deadline naming the endpoint", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("gave up after %v, want 3s", d)
		}
	})
}

func TestNew(t *testing.T) {
	for _, bad := range []string{"", "localhost:11434", "/v1", "ftp://h/v1", "http://"} {
		if _, err := New(bad, "m", key, nil); err == nil {
			t.Errorf("New(%q) took it", bad)
		}
	}
	if _, err := New("http://h/v1", " ", key, nil); err == nil {
		t.Error("New with an empty model took it")
	}
	c, err := New("https://user:pw@h/v1/?q=SECRET", "m", key, nil)
	if err != nil || c.Endpoint() != "https://h/v1/embeddings" {
		t.Errorf("Endpoint() = %q, %v; want no user, no query", c.Endpoint(), err)
	}
}

func TestCutWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"one two three", 9, "one two"},
		{"one two three", 8, "one two"},
		{"abcdefghij", 4, "abcd"},
		{"é é é", 4, "é"},
		{"ééé", 3, "é"},
	} {
		if got := cutWords(tc.in, tc.max); got != tc.want {
			t.Errorf("cutWords(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// TestErrorBodyHidesTheKey: an endpoint that quotes the key it was sent in
// its error answer (a proxy: "invalid key sk-..."), whole or cut at the
// quote's end, does not get it into the error.
func TestErrorBodyHidesTheKey(t *testing.T) {
	for name, pad := range map[string]int{"whole": 10, "cut": maxErrorBody - 20} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, strings.Repeat("x", pad)+"invalid key "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), http.StatusUnauthorized)
			}))
			defer srv.Close()
			c, err := New(srv.URL+"/v1", "m", key, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdleConnections()
			_, err = c.Embed(context.Background(), []string{"a"})
			if !errors.Is(err, ErrBadResponse) || !strings.Contains(err.Error(), "status 401") {
				t.Fatalf("Embed = %v; want a bad response, status 401", err)
			}
			for _, part := range []string{key, key[:8]} {
				if strings.Contains(err.Error(), part) {
					t.Errorf("Embed's error %q shows the key (%q)", err, part)
				}
			}
		})
	}
}
