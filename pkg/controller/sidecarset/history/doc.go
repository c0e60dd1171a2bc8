// Package history keeps the SidecarSetRevisions of each SidecarSet: which revision records the
// current spec, under which name, and which old revisions are pruned. Compare is the pure core
// (revision.go: no I/O, no clock); Writer applies its plan through a Store (history.go), for the
// controller's rounds.
//
// The snapshot, name and lookup rules are package revision's (shared with kubectl sidecarset
// migrate). The newest revision always equals the live spec; an older identical revision is
// renumbered instead of duplicated. A revision recorded elsewhere (OpenKruise's, imported by
// kubectl sidecarset migrate) is reused whatever its name; a revision without a controlling
// SidecarSet is adopted by the SidecarSet it is labelled with. Pruning never deletes the latest
// revision and never keeps more than RevisionCap revisions, pinned and in-use ones included:
// beyond revisionHistoryLimit, pinned or in-use revisions are deleted only past RevisionCap, so
// that whatever pods claim, at most max(revisionHistoryLimit, MinRevisionCap) are stored.
package history
