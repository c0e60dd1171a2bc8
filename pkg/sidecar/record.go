package sidecar

// RecordedContainer is one container's state recorded before an in-place update.
type RecordedContainer struct {
	Name   string
	Status InPlaceUpdateContainerStatus
}

// LookupInPlaceUpdate returns the recorded container states of sidecarSetName in an
// InPlaceUpdateStateAnnotation value, each container once, with the same result (and error) as
// ParseInPlaceUpdateStates. The form RecordInPlaceUpdate writes is scanned (see scan.go); anything
// unusual (escapes, whitespace other than spaces, unknown or differently cased fields, nulls,
// numbers that are not plain integers, duplicated fields or entries) is decoded.
func LookupInPlaceUpdate(value, sidecarSetName string) ([]RecordedContainer, error) {
	if plainJSON(value) {
		s := scanner{in: value}
		if rec, ok := s.inPlaceUpdate(sidecarSetName); ok {
			return rec, nil
		}
	}
	states, err := ParseInPlaceUpdateStates(value)
	if err != nil {
		return nil, err
	}
	var rec []RecordedContainer
	if st := states[sidecarSetName]; st != nil {
		for name, status := range st.LastContainerStatuses {
			rec = append(rec, RecordedContainer{Name: name, Status: status})
		}
	}
	return rec, nil
}

// inPlaceUpdate scans the map of SidecarSet name to InPlaceUpdateState for name's entry.
func (s *scanner) inPlaceUpdate(name string) (rec []RecordedContainer, ok bool) {
	found := false
	ok = s.members(func(key string) bool {
		r, ok := s.inPlaceState()
		if !ok || (key == name && found) { // a duplicate: let the decoder decide which wins
			return false
		}
		if key == name {
			found, rec = true, r
		}
		return true
	}) && s.end()
	return rec, ok
}

// inPlaceState scans one InPlaceUpdateState object.
func (s *scanner) inPlaceState() (rec []RecordedContainer, ok bool) {
	var seen fields
	ok = s.members(func(key string) bool {
		switch key {
		case "revision":
			_, ok := s.str()
			return ok && seen.first(0)
		case "updateTimestamp":
			_, ok := s.timestamp()
			return ok && seen.first(1)
		case "lastContainerStatuses":
			var ok bool
			rec, ok = s.recordedContainers()
			return ok && seen.first(2)
		}
		return false
	})
	return rec, ok
}

// recordedContainers scans the map of container name to InPlaceUpdateContainerStatus; of
// duplicate names the last wins, as in encoding/json.
func (s *scanner) recordedContainers() (rec []RecordedContainer, ok bool) {
	ok = s.members(func(name string) bool {
		st, ok := s.containerStatus()
		if !ok {
			return false
		}
		for i := range rec {
			if rec[i].Name == name {
				rec[i].Status = st
				return true
			}
		}
		rec = append(rec, RecordedContainer{Name: name, Status: st})
		return true
	})
	return rec, ok
}

// containerStatus scans one InPlaceUpdateContainerStatus object.
func (s *scanner) containerStatus() (st InPlaceUpdateContainerStatus, ok bool) {
	var seen fields
	ok = s.members(func(key string) bool {
		var ok bool
		switch key {
		case "imageID":
			st.ImageID, ok = s.str()
			return ok && seen.first(0)
		case "containerID":
			st.ContainerID, ok = s.str()
			return ok && seen.first(1)
		case "restartCount":
			var n int64
			n, ok = s.integer(32)
			st.RestartCount = int32(n)
			return ok && seen.first(2)
		case "podGeneration":
			st.PodGeneration, ok = s.integer(64)
			return ok && seen.first(3)
		}
		return false
	})
	return st, ok
}
