// Not Go code: this file only fences node_modules/ (npm's install of the
// embedding server) out of the switchboard module, so that its ./...
// never builds, vets or tests them.
module switchboard-toolsearch-embedserver

go 1.26.0
