package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Resolve returns a copy of s with the ${...} templates in Args, Env values,
// URL and Headers values substituted, and the [Secrets] that came from the
// environment. It looks variables up with lookup; nil means [os.LookupEnv].
//
// The templates are ${VAR}, ${env:VAR} (the same) and ${VAR:-default}, whose
// default applies when VAR is unset or empty. An unset variable without a
// default is an error naming the variable and the field. No error ever holds
// a value. On error, the returned Server is the zero value.
func (s *Server) Resolve(lookup func(string) (string, bool)) (Server, *Secrets, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	r := &resolver{src: s, lookup: lookup, secrets: &Secrets{}}
	out := s.Clone()
	for i, a := range out.Args {
		out.Args[i] = r.expand(fmt.Sprintf("args[%d]", i), a)
	}
	for _, k := range sortedKeys(out.Env) {
		out.Env[k] = r.expand("env."+k, out.Env[k])
	}
	if out.URL != "" {
		n := len(r.errs)
		out.URL = r.expand("url", out.URL)
		if n == len(r.errs) && strings.Contains(s.URL, "${") && !isHTTPURL(out.URL) {
			r.fail("url", "want an absolute http or https URL after substitution")
		}
	}
	for _, k := range sortedKeys(out.Headers) {
		n := len(r.errs)
		out.Headers[k] = r.expand("headers."+k, out.Headers[k])
		if n == len(r.errs) && strings.ContainsAny(out.Headers[k], "\r\n\x00") {
			// A value from the environment must not smuggle in a header.
			r.fail("headers."+k, "value contains a line break or NUL after substitution")
		}
	}
	if out.OAuth != nil {
		out.OAuth.ClientSecret = r.expand("oauth.clientSecret", out.OAuth.ClientSecret)
		if s.OAuth.ClientSecret != "" && !strings.Contains(s.OAuth.ClientSecret, "${") {
			r.secrets.Add(out.OAuth.ClientSecret) // a secret written as is is one too
		}
	}
	if len(r.errs) > 0 {
		return Server{}, r.secrets, errors.Join(r.errs...)
	}
	return out, r.secrets, nil
}

type resolver struct {
	src     *Server
	lookup  func(string) (string, bool)
	secrets *Secrets
	errs    []error
}

func (r *resolver) fail(field, problem string) {
	r.errs = append(r.errs, &Error{File: r.src.Source, Server: r.src.Name, Field: field, Problem: problem, entry: true})
}

func (r *resolver) expand(field, s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	segs, err := parseTemplate(s)
	if err != nil {
		r.fail(field, err.Error())
		return ""
	}
	var b strings.Builder
	for _, seg := range segs {
		if seg.name == "" {
			b.WriteString(seg.text)
			continue
		}
		v, ok := r.lookup(seg.name)
		switch {
		case seg.hasDefault && v == "":
			b.WriteString(seg.text)
		case !ok:
			r.fail(field, fmt.Sprintf("environment variable %s is not set", seg.name))
		default:
			r.secrets.Add(v)
			b.WriteString(v)
		}
	}
	return b.String()
}
