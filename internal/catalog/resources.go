package catalog

import (
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// ResourceSource is one server's raw resources and templates. Sources are
// given in configured order: on a URI that two servers share, the first
// wins.
type ResourceSource struct {
	Server    string
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
}

// Resource is one exposed resource. Resources keep their URIs.
type Resource struct {
	Server   string
	Resource *mcp.Resource // values returned by a ResourceView are copies
}

// ResourceTemplate is one exposed resource template.
type ResourceTemplate struct {
	Server   string
	Template *mcp.ResourceTemplate // values returned by a ResourceView are copies
}

// A Collision is a resource URI that more than one server offers: the
// server configured first serves it.
type Collision struct {
	URI    string
	Winner string
	Losers []string
}

// ResourceView is an immutable merged view of the resources and templates
// of many servers. A nil *ResourceView behaves as an empty one.
type ResourceView struct {
	resources  []Resource // sorted by URI
	byURI      map[string]int
	templates  []ResourceTemplate // configured order
	matchers   []*uritemplate.Template
	collisions []Collision
}

// BuildResources merges sources, which are in configured order.
func BuildResources(sources []ResourceSource) *ResourceView {
	v := &ResourceView{byURI: make(map[string]int)}
	collided := make(map[string]*Collision)
	for _, src := range sources {
		for _, r := range src.Resources {
			if r == nil {
				continue
			}
			if i, taken := v.byURI[r.URI]; taken {
				if winner := v.resources[i].Server; winner != src.Server {
					c := collided[r.URI]
					if c == nil {
						c = &Collision{URI: r.URI, Winner: winner}
						collided[r.URI] = c
					}
					if !slices.Contains(c.Losers, src.Server) {
						c.Losers = append(c.Losers, src.Server)
					}
				}
				continue
			}
			v.byURI[r.URI] = len(v.resources)
			v.resources = append(v.resources, Resource{Server: src.Server, Resource: r})
		}
		for _, t := range src.Templates {
			if t == nil {
				continue
			}
			m, err := uritemplate.New(t.URITemplate)
			if err != nil {
				continue // a template no URI can be routed by
			}
			v.templates = append(v.templates, ResourceTemplate{Server: src.Server, Template: t})
			v.matchers = append(v.matchers, m)
		}
	}
	slices.SortFunc(v.resources, func(a, b Resource) int { return strings.Compare(a.Resource.URI, b.Resource.URI) })
	for i, r := range v.resources {
		v.byURI[r.Resource.URI] = i
	}
	for _, c := range collided {
		v.collisions = append(v.collisions, *c)
	}
	slices.SortFunc(v.collisions, func(a, b Collision) int { return strings.Compare(a.URI, b.URI) })
	return v
}

// Entries returns every exposed resource, sorted by URI, without copying:
// the slice and the definitions are the view's own, and must not be
// changed.
func (v *ResourceView) Entries() []Resource {
	if v == nil {
		return nil
	}
	return v.resources
}

// TemplateEntries returns every exposed resource template, in configured
// order of their servers, without copying.
func (v *ResourceView) TemplateEntries() []ResourceTemplate {
	if v == nil {
		return nil
	}
	return v.templates
}

// Resources returns every exposed resource, sorted by URI, as copies.
func (v *ResourceView) Resources() []Resource {
	if v == nil {
		return []Resource{}
	}
	out := make([]Resource, len(v.resources))
	for i, r := range v.resources {
		out[i] = Resource{Server: r.Server, Resource: CloneResource(r.Resource)}
	}
	return out
}

// Templates returns every exposed template, in configured order, as copies.
func (v *ResourceView) Templates() []ResourceTemplate {
	if v == nil {
		return []ResourceTemplate{}
	}
	out := make([]ResourceTemplate, len(v.templates))
	for i, t := range v.templates {
		out[i] = ResourceTemplate{Server: t.Server, Template: CloneTemplate(t.Template)}
	}
	return out
}

// URIs returns the URIs of every exposed resource, sorted.
func (v *ResourceView) URIs() []string {
	if v == nil {
		return []string{}
	}
	out := make([]string, len(v.resources))
	for i, r := range v.resources {
		out[i] = r.Resource.URI
	}
	return out
}

// Route returns the server that serves uri: the one that lists it (the
// first configured, on a collision), else the first whose template matches
// it.
func (v *ResourceView) Route(uri string) (server string, ok bool) {
	server, _, _, ok = v.Find(uri)
	return server, ok
}

// Find is Route, which also returns what routes uri, uncopied: the listed
// resource, or else the matching template.
func (v *ResourceView) Find(uri string) (server string, resource *mcp.Resource, template *mcp.ResourceTemplate, ok bool) {
	if v == nil {
		return "", nil, nil, false
	}
	if i, ok := v.byURI[uri]; ok {
		return v.resources[i].Server, v.resources[i].Resource, nil, true
	}
	for i, m := range v.matchers {
		if m.Regexp().MatchString(uri) {
			return v.templates[i].Server, nil, v.templates[i].Template, true
		}
	}
	return "", nil, nil, false
}

// Collisions returns the URIs that more than one server offers, sorted.
func (v *ResourceView) Collisions() []Collision {
	if v == nil {
		return nil
	}
	out := make([]Collision, len(v.collisions))
	for i, c := range v.collisions {
		out[i] = Collision{URI: c.URI, Winner: c.Winner, Losers: slices.Clone(c.Losers)}
	}
	return out
}

// Counts returns how many resources each server serves.
func (v *ResourceView) Counts() map[string]int {
	counts := make(map[string]int)
	if v != nil {
		for _, r := range v.resources {
			counts[r.Server]++
		}
	}
	return counts
}
