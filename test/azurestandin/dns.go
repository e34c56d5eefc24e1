package azurestandin

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/google/uuid"
	"k8s.io/utils/ptr"
)

// MaxRecordSets is the most record sets a private zone holds.
const MaxRecordSets = 25000

// defaultTop is the page size without $top; maxTop the largest $top accepted.
const (
	defaultTop = 100
	maxTop     = 1000
)

const typePrefix = "Microsoft.Network/privateDnsZones"

var recordTypes = []string{"A", "AAAA", "CNAME", "MX", "PTR", "SOA", "SRV", "TXT"}

type zoneKey struct{ subscription, resourceGroup, name string }

type rsKey struct{ name, rtype string }

func (k rsKey) less(o rsKey) int {
	return cmp.Or(cmp.Compare(k.name, o.name), cmp.Compare(k.rtype, o.rtype))
}

type zone struct {
	key     zoneKey
	etag    string
	records map[rsKey]*armprivatedns.RecordSet
}

// CreateZone creates an empty private zone (with its SOA record set, as Azure does).
func (s *Server) CreateZone(subscriptionID, resourceGroup, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := zoneKey{strings.ToLower(subscriptionID), strings.ToLower(resourceGroup), strings.ToLower(name)}
	z := &zone{key: k, etag: uuid.NewString(), records: map[rsKey]*armprivatedns.RecordSet{}}
	s.zones[k] = z
	z.put(rsKey{"@", "SOA"}, &armprivatedns.RecordSetProperties{TTL: ptr.To[int64](3600), SoaRecord: &armprivatedns.SoaRecord{
		Host: ptr.To("azureprivatedns.net"), Email: ptr.To("azureprivatedns-host.microsoft.com"), SerialNumber: ptr.To[int64](1),
		RefreshTime: ptr.To[int64](3600), RetryTime: ptr.To[int64](300), ExpireTime: ptr.To[int64](2419200), MinimumTTL: ptr.To[int64](10)}}, subscriptionID, resourceGroup)
}

// Records is a zone's A, AAAA, CNAME and TXT record sets as "name TYPE" (name relative to the
// zone, "@" for the apex) → values, for assertions.
func (s *Server) Records(subscriptionID, resourceGroup, name string) map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zones[zoneKey{strings.ToLower(subscriptionID), strings.ToLower(resourceGroup), strings.ToLower(name)}]
	out := map[string][]string{}
	if z == nil {
		return out
	}
	for k, rs := range z.records {
		p := rs.Properties
		var values []string
		switch k.rtype {
		case "A":
			for _, a := range p.ARecords {
				values = append(values, *a.IPv4Address)
			}
		case "AAAA":
			for _, a := range p.AaaaRecords {
				values = append(values, *a.IPv6Address)
			}
		case "CNAME":
			values = append(values, *p.CnameRecord.Cname)
		case "TXT":
			for _, t := range p.TxtRecords { // a record's strings are one value, as DNS reads them
				var b strings.Builder
				for _, v := range t.Value {
					b.WriteString(*v)
				}
				values = append(values, b.String())
			}
		default:
			continue
		}
		slices.Sort(values)
		out[k.name+" "+k.rtype] = values
	}
	return out
}

// SetCNAME writes a CNAME record set directly, as someone editing the zone in the portal would.
func (s *Server) SetCNAME(subscriptionID, resourceGroup, zoneName, name, target string) error {
	return s.direct(subscriptionID, resourceGroup, zoneName, func(z *zone) {
		z.put(rsKey{strings.ToLower(name), "CNAME"}, &armprivatedns.RecordSetProperties{TTL: ptr.To[int64](300),
			CnameRecord: &armprivatedns.CnameRecord{Cname: ptr.To(target)}}, subscriptionID, resourceGroup)
	})
}

// SetA writes an A record set directly.
func (s *Server) SetA(subscriptionID, resourceGroup, zoneName, name string, ips ...string) error {
	return s.direct(subscriptionID, resourceGroup, zoneName, func(z *zone) {
		p := &armprivatedns.RecordSetProperties{TTL: ptr.To[int64](300)}
		for _, ip := range ips {
			p.ARecords = append(p.ARecords, &armprivatedns.ARecord{IPv4Address: ptr.To(ip)})
		}
		z.put(rsKey{strings.ToLower(name), "A"}, p, subscriptionID, resourceGroup)
	})
}

// SetTXT writes a TXT record set directly, one record per value.
func (s *Server) SetTXT(subscriptionID, resourceGroup, zoneName, name string, values ...string) error {
	return s.direct(subscriptionID, resourceGroup, zoneName, func(z *zone) {
		p := &armprivatedns.RecordSetProperties{TTL: ptr.To[int64](300)}
		for _, v := range values {
			p.TxtRecords = append(p.TxtRecords, &armprivatedns.TxtRecord{Value: []*string{ptr.To(v)}})
		}
		z.put(rsKey{strings.ToLower(name), "TXT"}, p, subscriptionID, resourceGroup)
	})
}

// Delete removes a record set directly.
func (s *Server) Delete(subscriptionID, resourceGroup, zoneName, name, rtype string) error {
	return s.direct(subscriptionID, resourceGroup, zoneName, func(z *zone) { delete(z.records, rsKey{strings.ToLower(name), rtype}) })
}

func (s *Server) direct(subscriptionID, resourceGroup, zoneName string, fn func(*zone)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zones[zoneKey{strings.ToLower(subscriptionID), strings.ToLower(resourceGroup), strings.ToLower(zoneName)}]
	if z == nil {
		return fmt.Errorf("no zone %s in %s/%s", zoneName, subscriptionID, resourceGroup)
	}
	fn(z)
	return nil
}

// put stores a record set with a new ETag.
func (z *zone) put(k rsKey, p *armprivatedns.RecordSetProperties, subscriptionID, resourceGroup string) *armprivatedns.RecordSet {
	fqdn := z.key.name + "."
	if k.name != "@" {
		fqdn = k.name + "." + fqdn
	}
	p.Fqdn, p.IsAutoRegistered = ptr.To(fqdn), ptr.To(false)
	if p.TTL == nil {
		p.TTL = ptr.To[int64](3600)
	}
	rs := &armprivatedns.RecordSet{
		ID:   ptr.To(fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s/%s/%s", subscriptionID, resourceGroup, typePrefix, z.key.name, k.rtype, k.name)),
		Name: ptr.To(k.name), Type: ptr.To(typePrefix + "/" + k.rtype), Etag: ptr.To(uuid.NewString()), Properties: p}
	z.records[k] = rs
	return rs
}

// resourceManager serves /subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Network/
// privateDnsZones[/{zone}[/{type}[/{name}]]].
func (s *Server) resourceManager(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 7 || !strings.EqualFold(parts[2], "resourceGroups") || !strings.EqualFold(parts[4], "providers") ||
		!strings.EqualFold(parts[5], "Microsoft.Network") || !strings.EqualFold(parts[6], "privateDnsZones") || len(parts) > 10 {
		armError(w, http.StatusNotFound, "InvalidResourceType", "The resource type could not be found in the namespace 'Microsoft.Network'.")
		return
	}
	if r.URL.Query().Get("api-version") == "" {
		armError(w, http.StatusBadRequest, "MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests.")
		return
	}
	sub, rg := parts[1], parts[3]
	if len(parts) == 7 {
		s.listZones(w, r, sub, rg)
		return
	}
	s.mu.Lock()
	z := s.zones[zoneKey{strings.ToLower(sub), strings.ToLower(rg), strings.ToLower(parts[7])}]
	s.mu.Unlock()
	if z == nil {
		armError(w, http.StatusNotFound, "ResourceNotFound", fmt.Sprintf("The Resource '%s/%s' under resource group '%s' was not found.", typePrefix, parts[7], rg))
		return
	}
	switch {
	case len(parts) == 8 && r.Method == http.MethodGet:
		s.count("getZone")
		s.mu.Lock()
		pz := zoneObject(z, sub, rg)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, pz)
	case len(parts) == 9 && r.Method == http.MethodGet:
		rtype := strings.ToUpper(parts[8])
		if rtype == "ALL" {
			s.count("listRecordSets")
			rtype = ""
		} else if !slices.Contains(recordTypes, rtype) {
			armError(w, http.StatusBadRequest, "BadRequest", "Invalid record type "+parts[8])
			return
		} else {
			s.count("listRecordSetsByType")
		}
		s.listRecordSets(w, r, z, rtype)
	case len(parts) == 10:
		rtype := strings.ToUpper(parts[8])
		if !slices.Contains(recordTypes, rtype) {
			armError(w, http.StatusBadRequest, "BadRequest", "Invalid record type "+parts[8])
			return
		}
		s.recordSet(w, r, z, sub, rg, rsKey{strings.ToLower(parts[9]), rtype})
	default:
		armError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not supported here")
	}
}

func zoneObject(z *zone, sub, rg string) *armprivatedns.PrivateZone {
	state := armprivatedns.ProvisioningStateSucceeded
	return &armprivatedns.PrivateZone{
		ID:   ptr.To(fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", sub, rg, typePrefix, z.key.name)),
		Name: ptr.To(z.key.name), Type: ptr.To(typePrefix), Location: ptr.To("global"), Etag: ptr.To(z.etag),
		Properties: &armprivatedns.PrivateZoneProperties{NumberOfRecordSets: ptr.To(int64(len(z.records))), MaxNumberOfRecordSets: ptr.To[int64](MaxRecordSets),
			MaxNumberOfVirtualNetworkLinks: ptr.To[int64](1000), MaxNumberOfVirtualNetworkLinksWithRegistration: ptr.To[int64](100),
			NumberOfVirtualNetworkLinks: ptr.To[int64](0), NumberOfVirtualNetworkLinksWithRegistration: ptr.To[int64](0), ProvisioningState: &state},
	}
}

// top reads $top: 1 to 1000, 100 when absent.
func top(w http.ResponseWriter, q url.Values) (int, bool) {
	v := q.Get("$top")
	if v == "" {
		return defaultTop, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxTop {
		armError(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("Invalid $top value: '%s'. It must be a number between '1' and '%d'.", v, maxTop))
		return 0, false
	}
	return n, true
}

func (s *Server) listZones(w http.ResponseWriter, r *http.Request, sub, rg string) {
	s.count("listZones")
	n, ok := top(w, r.URL.Query())
	if !ok {
		return
	}
	s.mu.Lock()
	var zones []*armprivatedns.PrivateZone
	for k, z := range s.zones {
		if k.subscription == strings.ToLower(sub) && k.resourceGroup == strings.ToLower(rg) {
			zones = append(zones, zoneObject(z, sub, rg))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(zones, func(a, b *armprivatedns.PrivateZone) int { return cmp.Compare(*a.Name, *b.Name) })
	after := skipToken(r.URL.Query())
	start := 0
	if after != "" {
		start = len(zones)
		for i, z := range zones {
			if *z.Name > after {
				start = i
				break
			}
		}
	}
	end := min(start+n, len(zones))
	result := armprivatedns.PrivateZoneListResult{Value: zones[start:end]}
	if end < len(zones) {
		result.NextLink = ptr.To(s.nextLink(r, n, *zones[end-1].Name))
	}
	writeJSON(w, http.StatusOK, &result)
}

// listRecordSets is one page of a zone's record sets (of one type, or all), in name and type
// order; nextLink continues after the page's last record set.
func (s *Server) listRecordSets(w http.ResponseWriter, r *http.Request, z *zone, rtype string) {
	q := r.URL.Query()
	n, ok := top(w, q)
	if !ok {
		return
	}
	// $recordsetnamesuffix: "only records that end with .<recordsetnamesuffix>", the name relative
	// to the zone (stored lower case; the suffix is compared so).
	suffix := strings.ToLower(q.Get("$recordsetnamesuffix"))
	var after rsKey
	if token := skipToken(q); token != "" {
		name, t, _ := strings.Cut(token, "/")
		after = rsKey{name, t}
	}
	s.mu.Lock()
	var keys []rsKey
	for k := range z.records {
		if (rtype == "" || k.rtype == rtype) && (suffix == "" || strings.HasSuffix(k.name, "."+suffix)) && (after == rsKey{} || k.less(after) > 0) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, rsKey.less)
	more := len(keys) > n
	keys = keys[:min(n, len(keys))]
	result := armprivatedns.RecordSetListResult{Value: make([]*armprivatedns.RecordSet, 0, len(keys))}
	for _, k := range keys {
		result.Value = append(result.Value, z.records[k])
	}
	body, err := json.Marshal(&result) // while locked: the record sets are replaced, never changed, but the map is
	s.mu.Unlock()
	if err != nil {
		armError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	if more {
		last := keys[len(keys)-1]
		result.NextLink = ptr.To(s.nextLink(r, n, last.name+"/"+last.rtype))
		body, _ = json.Marshal(&result)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("x-ms-request-id", requestID())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func skipToken(q url.Values) string {
	b, err := base64.RawURLEncoding.DecodeString(q.Get("$skipToken"))
	if err != nil {
		return ""
	}
	return string(b)
}

func (s *Server) nextLink(r *http.Request, n int, after string) string {
	q := url.Values{}
	q.Set("api-version", r.URL.Query().Get("api-version"))
	q.Set("$top", strconv.Itoa(n))
	if suffix := r.URL.Query().Get("$recordsetnamesuffix"); suffix != "" {
		q.Set("$recordsetnamesuffix", suffix)
	}
	q.Set("$skipToken", base64.RawURLEncoding.EncodeToString([]byte(after)))
	return strings.TrimSuffix(s.URL, "/") + r.URL.EscapedPath() + "?" + q.Encode()
}

// recordSet serves GET, PUT, PATCH and DELETE of one record set, with ETag preconditions.
func (s *Server) recordSet(w http.ResponseWriter, r *http.Request, z *zone, sub, rg string, k rsKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	current := z.records[k]
	ifMatch, ifNoneMatch := r.Header.Get("If-Match"), r.Header.Get("If-None-Match")
	precondition := func() bool {
		switch {
		case ifMatch == "*" && current == nil, ifMatch != "" && ifMatch != "*" && (current == nil || *current.Etag != ifMatch):
			armError(w, http.StatusPreconditionFailed, "PreconditionFailed", "The condition '"+ifMatch+"' in the If-Match header was not satisfied. The current ETag differs.")
			return false
		case ifNoneMatch == "*" && current != nil:
			armError(w, http.StatusPreconditionFailed, "PreconditionFailed", "The record set already exists (If-None-Match: *).")
			return false
		}
		return true
	}
	switch r.Method {
	case http.MethodGet:
		s.counts["getRecordSet"]++
		if current == nil {
			armError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("The resource record '%s' does not exist in resource group '%s' of subscription '%s'.", k.name, rg, sub))
			return
		}
		writeJSON(w, http.StatusOK, current)
	case http.MethodPut, http.MethodPatch:
		if r.Method == http.MethodPut {
			s.counts["putRecordSet"]++
		} else {
			s.counts["patchRecordSet"]++
		}
		if !precondition() {
			return
		}
		var in armprivatedns.RecordSet
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(body, &in)
		}
		if err != nil || in.Properties == nil {
			armError(w, http.StatusBadRequest, "InvalidRequestFormat", "Cannot parse the request: the record set needs properties.")
			return
		}
		p := in.Properties
		if r.Method == http.MethodPatch {
			if current == nil {
				armError(w, http.StatusNotFound, "NotFound", "The resource record '"+k.name+"' does not exist.")
				return
			}
			p = merge(current.Properties, in.Properties)
		}
		if msg := validate(k, p); msg != "" {
			armError(w, http.StatusBadRequest, "BadRequest", msg)
			return
		}
		if msg := conflict(z, k); msg != "" {
			armError(w, http.StatusConflict, "Conflict", msg)
			return
		}
		if current == nil && len(z.records) >= MaxRecordSets {
			armError(w, http.StatusConflict, "QuotaExceeded", fmt.Sprintf("The zone already holds the maximum of %d record sets.", MaxRecordSets))
			return
		}
		status := http.StatusOK
		if current == nil {
			status = http.StatusCreated
		}
		p.Fqdn, p.IsAutoRegistered = nil, nil
		writeJSON(w, status, z.put(k, p, sub, rg))
	case http.MethodDelete:
		s.counts["deleteRecordSet"]++
		if !precondition() {
			return
		}
		if k.rtype == "SOA" {
			armError(w, http.StatusBadRequest, "BadRequest", "The SOA record set of a zone cannot be deleted.")
			return
		}
		if current == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		delete(z.records, k)
		w.WriteHeader(http.StatusOK)
	default:
		armError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not supported on a record set")
	}
}

// validate checks that a record set carries the records of its type, and only those.
func validate(k rsKey, p *armprivatedns.RecordSetProperties) string {
	has := map[string]bool{"A": len(p.ARecords) > 0, "AAAA": len(p.AaaaRecords) > 0, "CNAME": p.CnameRecord != nil, "MX": len(p.MxRecords) > 0,
		"PTR": len(p.PtrRecords) > 0, "SOA": p.SoaRecord != nil, "SRV": len(p.SrvRecords) > 0, "TXT": len(p.TxtRecords) > 0}
	for t, present := range has {
		if present && t != k.rtype {
			return fmt.Sprintf("The record set of type %s cannot hold %s records.", k.rtype, t)
		}
	}
	if k.rtype == "CNAME" && (p.CnameRecord == nil || p.CnameRecord.Cname == nil || *p.CnameRecord.Cname == "") {
		return "A CNAME record set needs its cnameRecord."
	}
	if p.TTL != nil && (*p.TTL < 0 || *p.TTL > 2147483647) {
		return "The TTL must be between 0 and 2147483647."
	}
	return ""
}

// conflict: a CNAME record set cannot share its name with any other record set.
func conflict(z *zone, k rsKey) string {
	for other := range z.records {
		if other.name == k.name && other.rtype != k.rtype && (other.rtype == "CNAME" || k.rtype == "CNAME") {
			return fmt.Sprintf("The record set %s of type %s conflicts with the existing record set of type %s.", k.name, k.rtype, other.rtype)
		}
	}
	return ""
}

// merge is a PATCH: the fields given replace the current ones.
func merge(current, in *armprivatedns.RecordSetProperties) *armprivatedns.RecordSetProperties {
	out := *current
	if in.TTL != nil {
		out.TTL = in.TTL
	}
	if in.Metadata != nil {
		out.Metadata = in.Metadata
	}
	if in.ARecords != nil {
		out.ARecords = in.ARecords
	}
	if in.AaaaRecords != nil {
		out.AaaaRecords = in.AaaaRecords
	}
	if in.CnameRecord != nil {
		out.CnameRecord = in.CnameRecord
	}
	if in.TxtRecords != nil {
		out.TxtRecords = in.TxtRecords
	}
	return &out
}
