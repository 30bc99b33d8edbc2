// Package audit is the deep audit exchange, both sides of it: the consumer's Auditor (ask a
// manifest, compare, drill down, ledger, repair, seal) in auditor.go and the origin's
// ManifestServer (answer a manifest request from sealed epochs and the live fringe) in answer.go.
// The rules are SQL's; this package moves digests between two services and acts on what the
// comparison and the ledger decide. It never deletes a local copy and never requests repair for
// anything but a deficit.
package audit
