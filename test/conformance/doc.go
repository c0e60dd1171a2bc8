// Package conformance holds the file format of the SidecarSet acceptance scenarios
// (test/e2e/testdata/conformance/README.md) and the pure parts of running them: strict decoding of
// every documented file (meta.yaml, expect.yaml, procedure.yaml, namespace.yaml, scenario.yaml),
// jq assertions over JSON documents, requirement tokens, `${i}` and `${VAR}` expansion.
//
// Decoding accepts every field the README documents and rejects any other one, so that a typo in a
// scenario fails loudly instead of silently weakening it. Kubernetes manifests inside a scenario
// (SidecarSets, pod templates, merge patches) are kept as raw JSON: they are the API server's to
// validate, not the format's. Nothing here talks to a cluster; the e2e runners in test/e2e do.
package conformance
