// Package deploy holds the Kubernetes manifests of the gateway, and the test
// that checks them: each decodes strictly into its Kubernetes API type, and
// they agree with each other and with the gateway (probes on /healthz and
// /readyz, a config the gateway loads, a token from the Secret). It is a
// module of its own, so that the gateway's module does not depend on the
// Kubernetes API.
package deploy
