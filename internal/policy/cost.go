package policy

import "cel.dev/cel-go/common/cost"

// Bounds the load-time cost estimate assumes for what an identity carries.
// They are not enforced: at run time [CostLimit] is.
const (
	estListLen   = 100  // scopes, groups, and a claim's list
	estStringLen = 1024 // any string of the identity or the target
	estClaims    = 100  // claims
)

// sizes tells cel's cost estimator how big the variables are. Without it
// every list is unbounded, and every condition over one looks unbounded.
type sizes struct{}

func (sizes) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	p := n.Path()
	if len(p) == 0 {
		return nil
	}
	switch p[0] {
	case varIdentity:
		if len(p) == 2 {
			switch p[1] {
			case "scopes", "groups":
				return &cost.SizeEstimate{Min: 0, Max: estListLen}
			case "claims":
				return &cost.SizeEstimate{Min: 0, Max: estClaims}
			case "subject", "client":
				return &cost.SizeEstimate{Min: 0, Max: estStringLen}
			}
		}
		return &cost.SizeEstimate{Min: 0, Max: estStringLen}
	case varServer, varTool, varPrompt, varURI:
		return &cost.SizeEstimate{Min: 0, Max: estStringLen}
	case varAnnotations:
		return &cost.SizeEstimate{Min: 4, Max: 4}
	}
	return nil
}

func (sizes) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}
