// Not Go code: this file only fences node_modules/ (npm's install of the
// servers, where some packages ship .go files) out of the switchboard
// module, so that its ./... never builds, vets or tests them.
module switchboard-toolsearch-servers

go 1.26.0
