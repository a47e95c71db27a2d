package toolsearch

// synonymGroups are words that people and tool descriptions use for the
// same thing, in software: a query's word brings in the others of its
// group. They are general software words, chosen from the misses on the
// tuning split of bench/toolsearch (never the held-out one). Every word of
// a member must survive analysis (no stop words): a test holds them so.
var synonymGroups = [][]string{
	{"delete", "remove", "drop", "wipe", "erase", "destroy", "purge"},
	{"create", "add", "new", "make", "insert"},
	{"list", "enumerate"},
	{"read", "get", "fetch", "retrieve", "view", "show", "open", "see"},
	{"write", "save", "store", "persist"},
	{"search", "find", "lookup", "query", "locate"},
	{"update", "edit", "modify", "change", "bump", "set"},
	{"run", "execute", "start", "launch", "invoke"},
	{"stop", "kill", "terminate", "cancel", "abort"},
	{"hover", "mouse"},
	{"click", "press", "tap"},
	{"type", "fill", "enter", "input"},
	{"screenshot", "capture", "snapshot", "picture"},
	{"error", "exception", "failure", "crash", "problem"},
	{"log", "console", "output"},
	{"move", "drag", "rename"},
	{"download", "save", "fetch"},
	{"url", "link", "page", "website", "site", "web"},
	{"repository", "repo"},
	{"issue", "bug", "ticket"},
	{"pull request", "merge request", "pr"},
	{"remember", "memory", "memorize", "note"},
	{"directory", "folder"},
	{"file", "document"},
	{"image", "photo", "picture", "media"},
	{"message", "send", "post", "text", "notify"},
	{"cost", "price", "pricing", "billing", "spend"},
	{"metric", "monitor", "telemetry", "observe"},
	{"database", "db"},
	{"container", "pod"},
	{"map", "crawl", "sitemap"},
	{"size", "info", "metadata", "stat"},
}

// synonymWeight is how much a term a synonym brought in counts, against
// the query's own terms' 1.
const synonymWeight = 0.2

// orphanSynonymWeight is how much the synonyms of a query's word that no
// tool has count, together: that word counts only through them
// ("remember", which no tool says, through "memory"). Chosen on the
// tuning split of bench/toolsearch: MRR 0.566 at 0.2, 0.570 at 0.5, 0.582
// at 1 to 2 (and at 1 given to each synonym in full, 0.583; shared, a word
// with many synonyms counts no more than another).
const orphanSynonymWeight = 1.0

// synonyms maps a term to the terms of its groups' other members; a member
// of several words is brought in whole, and brings in the others only when
// the query holds all its words.
type synonyms struct {
	single map[string][]string // term → the other members' terms
	multi  [][2][]string       // (the words of a member, the other members' terms)
}

var querySynonyms = buildSynonyms(synonymGroups)

func buildSynonyms(groups [][]string) *synonyms {
	s := &synonyms{single: make(map[string][]string)}
	var a analyzer
	for _, group := range groups {
		members := make([][]string, len(group))
		for i, word := range group {
			a.analyze(word, func(t string) { members[i] = append(members[i], t) })
		}
		for i, member := range members {
			var others []string
			for j, other := range members {
				if j != i {
					others = append(others, other...)
				}
			}
			switch len(member) {
			case 0:
			case 1:
				s.single[member[0]] = append(s.single[member[0]], others...)
			default:
				s.multi = append(s.multi, [2][]string{member, others})
			}
		}
	}
	return s
}

// expand returns terms and, after them, the terms their synonyms bring in;
// from[i] is the index in terms of the term that brought in out[i], or -1
// for the query's own terms and those a member of several words brought
// in.
func (s *synonyms) expand(terms []string) (out []string, from []int) {
	have := make(map[string]bool, len(terms))
	for _, t := range terms {
		have[t] = true
		from = append(from, -1)
	}
	out = terms
	add := func(ts []string, by int) {
		for _, t := range ts {
			if !have[t] {
				have[t] = true
				out = append(out, t)
				from = append(from, by)
			}
		}
	}
	for i, t := range terms {
		add(s.single[t], i)
	}
	for _, m := range s.multi {
		all := true
		for _, t := range m[0] {
			all = all && have[t]
		}
		if all {
			add(m[1], -1)
		}
	}
	return out, from
}
