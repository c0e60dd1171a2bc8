// Package event holds the events a round of the SidecarSet controller records once the round's
// status is written (never before: a round whose status write failed records none, and the next
// round decides again). The steps of a round return them as Pending values; Record records them,
// in order, a NamespacedSidecarSet's on the NamespacedSidecarSet itself.
package event
