package main

import "net"

// openableURL returns the URL of the MCP endpoint of a listener asked for
// at requested (HOST:PORT) and bound at bound, as a person can open it, and
// whether the listener takes every interface. A browser cannot open
// http://0.0.0.0:P/: a listener on every interface (host 0.0.0.0, :: or
// none) is shown at loopback, of the same IP family.
func openableURL(requested string, bound net.Addr) (url string, everyInterface bool) {
	host, _, _ := net.SplitHostPort(requested)
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "http://" + bound.String() + "/mcp", false
	}
	ip := net.ParseIP(host)
	switch {
	case host == "" || ip != nil && ip.Equal(net.IPv4zero):
		host, everyInterface = "127.0.0.1", true
	case ip != nil && ip.IsUnspecified():
		host, everyInterface = "::1", true
	default:
		host, _, _ = net.SplitHostPort(bound.String())
	}
	return "http://" + net.JoinHostPort(host, port) + "/mcp", everyInterface
}
