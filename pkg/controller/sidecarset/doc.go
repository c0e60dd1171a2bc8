// Package sidecarset is the SidecarSet controller: for each SidecarSet it keeps the revision
// history and the status, and upgrades the sidecars of the pods it injected, in place, at the pace
// of its update strategy. It runs in the leader only; every replica serves the /rollout view
// (package view) from the same pod cache and planner.
//
// A round of one SidecarSet (round.go):
//
//  1. gathers the SidecarSet, its revisions and the pods it selects from informer caches (the pod
//     cache keeps only what planning reads of each pod, rollout.Pod: see podcache.Source);
//  2. records its current spec as a SidecarSetRevision and prunes old ones: beyond
//     revisionHistoryLimit, and pinned or in-use ones only past history.RevisionCap, so that whatever
//     pods claim at most max(revisionHistoryLimit, 10) are stored (package history: Compare plans,
//     pure; its Writer writes);
//  3. plans the rollout with the pure planner of package rollout, unless the pod cache does not
//     show the controller's own last pod writes yet (expectations.go): planning on such a cache
//     could take more pods down than maxUnavailable allows; it tells the planner which
//     namespaces' pods have held every place of a cluster SidecarSet's maxUnavailable for too
//     long while other namespaces waited (holds.go);
//  4. applies the plan (apply.go): not-upgradable conditions, hot-upgrade resets and in-place
//     upgrades, each the pure pod mutation of package inplace on a freshly read pod, written back as
//     a strategic merge patch guarded by the resourceVersion read; a pod that cannot be written is
//     skipped, the others go on;
//  5. writes the status once, only if it changed (status.go), with the conditions package
//     condition decides;
//  6. then, and only then, records the round's events (package event) and metrics (package metric).
//
// What queues a round is in handlers.go: the SidecarSet's own events and, paced (pace.go), the
// events of the pods that name it in their injected list.
package sidecarset
