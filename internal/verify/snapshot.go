package verify

import "strings"

// Snapshot is a whole zone as one read returned it (a zone transfer): every record checked can be
// answered from it as the zone's authoritative server would have answered a query for it, so one
// read serves every record of the zone that is due.
type Snapshot struct {
	// Server is the host:port the zone was read from.
	Server string
	apex   string
	names  map[string][]Record
	// interior holds the names that own no record but have names below them (empty
	// non-terminals): a server answers NOERROR for them, not NXDOMAIN.
	interior map[string]bool
}

// NewSnapshot indexes the records of the zone apex read from server. Records outside the zone
// are ignored.
func NewSnapshot(server, apex string, records []Record) *Snapshot {
	s := &Snapshot{Server: server, apex: Canonical(apex), names: map[string][]Record{}, interior: map[string]bool{}}
	for _, r := range records {
		name := Canonical(r.Name)
		if !s.Covers(name) {
			continue
		}
		s.names[name] = append(s.names[name], r)
		for parent := parentOf(name); parent != "" && parent != s.apex && s.Covers(parent); parent = parentOf(parent) {
			s.interior[parent] = true
		}
	}
	return s
}

// Covers reports whether name lies in the zone (the apex or below it).
func (s *Snapshot) Covers(name string) bool {
	name = Canonical(name)
	return name == s.apex || strings.HasSuffix(name, "."+s.apex)
}

// Len is the number of names that own records.
func (s *Snapshot) Len() int { return len(s.names) }

// Answer is the response the zone's authoritative server gives to the query of rs (see
// RecordSet.QueryType): the name's CNAME if it has one, else its records of the asked type;
// NXDOMAIN for a name that neither owns records nor has names below it. rs's name must be
// covered by the snapshot.
func (s *Snapshot) Answer(rs RecordSet) Response {
	out := Response{Server: s.Server, Rcode: "NOERROR"}
	records, owned := s.names[rs.Name]
	if !owned && !s.interior[rs.Name] && rs.Name != s.apex {
		out.Rcode = "NXDOMAIN"
		return out
	}
	for _, r := range records {
		if r.Type == "CNAME" {
			out.Records = []Record{r}
			return out
		}
		if r.Type == rs.QueryType() {
			out.Records = append(out.Records, r)
		}
	}
	return out
}

// parentOf is name without its first label ("" for the root).
func parentOf(name string) string {
	i := strings.IndexByte(name, '.')
	if i < 0 || i == len(name)-1 {
		return ""
	}
	return name[i+1:]
}
