package toolsearch_test

import (
	"fmt"

	"github.com/switchboard-mcp/switchboard/internal/toolsearch"
)

func Example() {
	idx, err := toolsearch.New(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = idx.Set("github", []toolsearch.Doc{
		{
			Name:        "github__create_issue",
			Description: "Create a new issue in a GitHub repository.",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{
				"owner": map[string]any{"type": "string", "description": "Repository owner"},
				"title": map[string]any{"type": "string", "description": "Issue title"},
			}},
		},
		{Name: "github__list_pull_requests", Description: "List the pull requests of a repository."},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// A list_changed from the filesystem server replaces its tools only.
	err = idx.Set("fs", []toolsearch.Doc{
		{Name: "fs__read_file", Title: "Read file", Description: "Read the contents of a file."},
		{Name: "fs__list_directory", Description: "List the files and directories in a directory."},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// No tool says "bug"; its synonym "issue" counts in its place.
	hits, err := idx.Search("report a bug", 2, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hits {
		fmt.Println(h.Server, h.Name)
	}

	// A tool the caller may not see is never found, and does not count.
	visible := func(name string) bool { return name != "fs__list_directory" }
	hits, _ = idx.Search("list files", 5, visible)
	for _, h := range hits {
		fmt.Println(h.Server, h.Name)
	}
	// Output:
	// github github__create_issue
	// fs fs__read_file
	// github github__list_pull_requests
}
