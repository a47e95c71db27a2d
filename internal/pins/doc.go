// Package pins keeps the pins of tool definitions: what a server's tools
// looked like when a person last trusted them, so that a definition that
// changes afterwards (a rug pull: an instruction slipped into a
// description, a widened schema, a flipped readOnlyHint) can be found and
// held until it is approved again.
//
// The pin of a tool ([Pin]) is the hex SHA-256 of the RFC 8785 (JSON
// Canonicalization Scheme) form of its [Definition]: name, title,
// description, inputSchema, outputSchema and annotations, absent fields left
// out. A definition larger than [MaxDefinitionBytes] or nested deeper than
// [MaxDepth] has no pin: [Pin] returns an error naming the tool.
//
// [File.Check] tells how each tool a server lists stands against its pins
// (pinned, changed, new, removed, or a duplicate or invalid listing); it
// remembers the definitions it found pinned, so that checking a list that
// did not change costs about as much as encoding it.
//
// [Compare] tells field by field what changed between two definitions, and
// [Suspicious] why a new description looks like an injection (a signal to
// show a person, never a verdict by itself).
//
// The pins live in one JSON [File], readable and diffable:
//
//	{
//	  "version": 1,
//	  "servers": {
//	    "github": {
//	      "tools": {
//	        "create_issue": {
//	          "definition": {"name": "create_issue", "description": "...", ...},
//	          "pin": "9f86d0...",
//	          "pinnedAt": "2026-11-28T22:30:00Z"
//	        }
//	      }
//	    }
//	  }
//	}
//
// [Load] reads it (a missing file is empty), [Save] replaces it atomically,
// keeping a backup of a file it could not read, and [Update] does both under
// an exclusive lock on path+".lock", so that two processes sharing a file
// do not lose each other's pins.
//
// This package only computes and stores; holding a tool, the modes and the
// command line are its callers' business.
package pins
