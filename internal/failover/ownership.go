package failover

import "strings"

// ExternalDNS's TXT registry: an ownership value is "heritage=external-dns," followed by
// comma-separated labels, among them the owner ID.
const (
	heritage    = "heritage=external-dns"
	ownerKey    = "external-dns/owner="
	resourceKey = "external-dns/resource="
)

// PassOwnership returns the ownership TXT value that gives a record from one ExternalDNS owner ID
// to another, with every other label kept (the resource that published it, the record type),
// and whether value was an ownership value naming from. The zone writer replaces the old value by
// the new one in one update, with the old one as its prerequisite: the taking ExternalDNS then
// updates the record in place at its next synchronization, and the old owner's, if it comes
// back, finds another owner and leaves the record alone. Quotes around the value (as dig prints
// a TXT record) are kept. An encrypted value (--txt-encrypt-enabled) is not recognised.
func PassOwnership(value, from, to string) (string, bool) {
	quoted := len(value) >= 2 && strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`)
	if quoted {
		value = value[1 : len(value)-1]
	}
	labels := strings.Split(value, ",")
	if len(labels) < 2 || labels[0] != heritage || from == "" || to == "" {
		return "", false
	}
	passed := false
	for i, label := range labels[1:] {
		if owner, ok := strings.CutPrefix(label, ownerKey); ok {
			if owner != from {
				return "", false
			}
			labels[i+1], passed = ownerKey+to, true
		}
	}
	if !passed {
		return "", false
	}
	out := strings.Join(labels, ",")
	if quoted {
		out = `"` + out + `"`
	}
	return out, true
}

// OwnerOf is the owner ID an ownership TXT value names, or "" for any other value.
func OwnerOf(value string) string {
	labels := strings.Split(strings.Trim(value, `"`), ",")
	if len(labels) < 2 || labels[0] != heritage {
		return ""
	}
	for _, label := range labels[1:] {
		if owner, ok := strings.CutPrefix(label, ownerKey); ok {
			return owner
		}
	}
	return ""
}

// resourceNamespace is the namespace of the DNSEndpoint an ownership value says published the
// record (external-dns/resource=crd/<namespace>/<name>), or "".
func resourceNamespace(value string) string {
	for _, label := range strings.Split(strings.Trim(value, `"`), ",") {
		if resource, ok := strings.CutPrefix(label, resourceKey+"crd/"); ok {
			ns, _, found := strings.Cut(resource, "/")
			if found {
				return ns
			}
		}
	}
	return ""
}
