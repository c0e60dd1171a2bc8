// Package view serves the GET sidecarsets/<name>/rollout view (and its preview of a proposed
// spec): Rollout plans from the pod cache with the same planner, resize support and pre-download
// holds the controller's rounds use, and the namespaces' holds, backoffs and evictions the
// SidecarSet's status records, so that the view says exactly what the next round would do. Every
// replica serves it, leader or not; it writes nothing.
package view
