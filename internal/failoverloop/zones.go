package failoverloop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/verify"
	"github.com/service-router/service-router-operator/internal/zoneconfig"
	"github.com/service-router/service-router-operator/internal/zonewriter"
)

// zoneIO reads and writes one zone for failover (internal/zonewriter).
type zoneIO interface {
	// Read reads the zone whole; ReadWitness only its heartbeats (known: their names as the last
	// readings showed them, for a reader that asks for each by name).
	Read(ctx context.Context) (failover.ZoneReading, error)
	ReadWitness(ctx context.Context, known []string) (failover.ZoneReading, error)
	WriteHeartbeat(ctx context.Context, cluster, region, value string) error
	RemoveLegacyHeartbeat(ctx context.Context, cluster, region string) error
	// PassOwnership rewrites an ownership TXT record; WriteIntermediate an intermediate's CNAME
	// (both conditional: zonewriter.ErrChanged when the zone holds something else).
	PassOwnership(ctx context.Context, txtName string, ttl uint32, old, new string) error
	WriteIntermediate(ctx context.Context, name string, ttl uint32, old, new string) error
}

type rfc2136IO struct{ zonewriter.RFC2136 }

type azureIO struct{ *zonewriter.AzurePrivateDNS }

// PassOwnership keeps the record set's own TTL in Azure.
func (z azureIO) PassOwnership(ctx context.Context, txtName string, _ uint32, old, new string) error {
	return z.AzurePrivateDNS.PassOwnership(ctx, txtName, old, new)
}

// write makes a pass or an upkeep write: an ownership record's when it names one (txtName),
// otherwise the intermediate name's CNAME.
func write(ctx context.Context, io zoneIO, txtName, name string, ttl uint32, old, new string) error {
	if txtName != "" {
		return io.PassOwnership(ctx, txtName, ttl, old, new)
	}
	return io.WriteIntermediate(ctx, name, ttl, old, new)
}

// failoverZone is a zone with failover settings: as the machine knows it, and its reader and
// writer.
type failoverZone struct {
	failover.MachineZone
	io zoneIO
}

type cachedIO struct {
	key string
	io  zoneIO
}

// zones are the zones with failover settings this cluster can read and write; a zone whose writer
// cannot be built (an unreadable key file, an Azure configuration error) is left out this round
// and logged.
func (f *Loop) zones(cfg *clusterv1alpha1.DNSConfiguration, domain string) []failoverZone {
	var out []failoverZone
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if c.Failover == nil || c.Verification == nil {
			continue
		}
		io, err := f.zoneIO(c, domain)
		if err != nil {
			ctrl.Log.WithName("failover").Error(err, "the zone takes no part in failover this round", "controller", c.Name)
			continue
		}
		zone, transferred := cmp.Or(c.Verification.TransferZone, domain), true
		if a := c.Verification.AzurePrivateDNS; a != nil {
			zone, transferred = zoneconfig.AzureZone(a).ZoneName, false
		}
		out = append(out, failoverZone{MachineZone: failover.MachineZone{Controller: c.Name, Region: c.Region, Zone: zone, Transferred: transferred,
			Owner: c.Failover.OwnerID, TXTPrefix: c.Failover.TXTPrefix}, io: io})
	}
	return out
}

// zoneIO builds (or reuses, while its settings stay the same) the reader and writer of a zone. An
// RFC 2136 zone's apex is verification.transferZone, or the cluster's domain.
func (f *Loop) zoneIO(c clusterv1alpha1.ExternalDNSController, domain string) (zoneIO, error) {
	v := c.Verification
	if a := v.AzurePrivateDNS; a != nil {
		key := fmt.Sprintf("%+v", *a)
		if cached, ok := f.ios[c.Name]; ok && cached.key == key {
			return cached.io, nil
		}
		w, err := zonewriter.NewAzurePrivateDNS(*zoneconfig.AzureZone(a), nil)
		if err != nil {
			return nil, err
		}
		f.ios[c.Name] = cachedIO{key, azureIO{w}}
		return azureIO{w}, nil
	}
	if len(v.Nameservers) == 0 {
		return nil, errors.New("failover needs the zone's primary: verification.nameservers")
	}
	w := zonewriter.RFC2136{Server: v.Nameservers[0], Zone: cmp.Or(v.TransferZone, domain)}
	if v.Timeout != nil {
		w.Timeout = v.Timeout.Duration
	}
	if k := c.Failover.TSIG; k != nil {
		secret, err := os.ReadFile(k.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("reading the TSIG secret of zone %s: %w", c.Name, err)
		}
		w.TSIGName, w.TSIGAlgorithm, w.TSIGSecret = k.KeyName, cmp.Or(k.Algorithm, "hmac-sha256"), strings.TrimSpace(string(secret))
	}
	return rfc2136IO{w}, nil
}

// carryOut does what the machine asks (failover.Ready), in the order it lists, and returns the
// answers. Requests of one kind go to every zone or region at once: a zone that does not answer
// costs the round its timeout once, not once per zone after it.
func (f *Loop) carryOut(ctx context.Context, identity *clusterv1alpha1.ClusterIdentity, zones []failoverZone, port string, rd failover.Ready) failover.Answers {
	log := ctrl.Log.WithName("failover")
	if rd.Publish != nil {
		f.publish(false, *rd.Publish)
	}
	cluster, own := identity.Spec.Cluster, identity.Spec.Region
	var a failover.Answers
	a.Removals = make([]error, len(rd.Removals))
	for i, zone := range rd.Removals {
		if a.Removals[i] = zones[zone].io.RemoveLegacyHeartbeat(ctx, cluster, own); a.Removals[i] != nil {
			log.Error(a.Removals[i], "removing this cluster's heartbeat under its earlier name", "controller", zones[zone].Controller)
		}
	}
	if len(rd.ProbeOwn) > 0 {
		a.OwnAnswers = f.anyAnswers(ctx, rd.ProbeOwn, port)
	}
	a.Heartbeats = make([]failover.ZoneAnswer, len(rd.Heartbeats))
	var wg sync.WaitGroup
	for i, w := range rd.Heartbeats {
		z := zones[w.Zone]
		wg.Go(func() {
			a.Heartbeats[i] = f.answerOf(func() error { return z.io.WriteHeartbeat(ctx, cluster, own, w.Value) })
			if err := a.Heartbeats[i].Err; err != nil {
				log.Error(err, "writing the heartbeat", "controller", z.Controller)
			}
		})
	}
	wg.Wait()
	for _, s := range rd.Skipped {
		log.V(1).Info("the zone did not answer lately; it says nothing this round", "controller", s.Controller, "until", s.Until, "error", s.Err.Error())
	}
	a.Reads = make([]failover.ReadAnswer, len(rd.Reads))
	for i, r := range rd.Reads {
		z := zones[r.Zone]
		wg.Go(func() {
			a.Reads[i].ZoneAnswer = f.answerOf(func() (err error) {
				if r.Full {
					a.Reads[i].Reading, err = z.io.Read(ctx)
				} else {
					a.Reads[i].Reading, err = z.io.ReadWitness(ctx, r.Known)
				}
				return err
			})
			if err := a.Reads[i].Err; err != nil {
				log.V(1).Info("the zone could not be read; it says nothing this round", "controller", z.Controller, "error", err.Error())
			}
		})
	}
	wg.Wait()
	a.Probes = f.probeRegions(ctx, rd.Probes, port)
	a.Passes = f.pass(ctx, zones, rd.Passes)
	a.Upkeep = f.upkeep(ctx, zones, rd.Upkeep)
	return a
}

// upkeep makes the writes that keep this cluster's intermediate names, one after another; a
// refusal is logged, and the next whole reading of the zone says what is still to write.
func (f *Loop) upkeep(ctx context.Context, zones []failoverZone, writes []failover.UpkeepWrite) []error {
	ios := map[string]zoneIO{}
	for _, z := range zones {
		ios[z.Controller] = z.io
	}
	out := make([]error, len(writes))
	for i, w := range writes {
		out[i] = write(ctx, ios[w.Controller], w.TXTName, w.Name, w.TTL, w.Old, w.New)
		metrics.CountIntermediateWrite(w.Controller, upkeepKind(w), ownershipResult(out[i]))
		if out[i] != nil && !errors.Is(out[i], zonewriter.ErrChanged) {
			ctrl.Log.WithName("failover").Error(out[i], "writing an intermediate name", "controller", w.Controller, "name", w.Name)
		}
	}
	return out
}

// upkeepKind is what an upkeep write does, as service_router_failover_intermediate_writes_total
// counts it.
func upkeepKind(w failover.UpkeepWrite) string {
	switch {
	case w.TXTName != "":
		return metrics.IntermediateReleased
	case w.Old == "":
		return metrics.IntermediateCreated
	}
	return metrics.IntermediateDeleted
}

// answerOf is how a zone answered request: when, and its failure in a few words (Resource
// Manager's errors start with the request's URL; its status and code come after).
func (f *Loop) answerOf(request func() error) failover.ZoneAnswer {
	a := failover.ZoneAnswer{Started: f.now()}
	a.Err = request()
	a.Finished = f.now()
	if a.Err != nil {
		reason, retryAfter := azureprivatedns.Classify(a.Err)
		a.Reason, a.Silent = decide.Truncate(reason, 200), zonewriter.DidNotAnswer(a.Err)
		a.Throttled = retryAfter > 0 || strings.HasPrefix(reason, verify.ThrottledReason(0))
	}
	return a
}

// pass writes the ownership passes, one after another, each one conditional write.
func (f *Loop) pass(ctx context.Context, zones []failoverZone, passes []failover.PassWrite) []failover.PassAnswer {
	ios := map[string]zoneIO{}
	for _, z := range zones {
		ios[z.Controller] = z.io
	}
	out := make([]failover.PassAnswer, len(passes))
	for i, w := range passes {
		p := w.Pass
		err := write(ctx, ios[p.Controller], p.TXTName, p.Hostname, p.TTL, p.Old, p.New)
		metrics.CountOwnershipWrite(p.Controller, ownershipResult(err))
		out[i] = failover.PassAnswer{At: f.now(), Changed: errors.Is(err, zonewriter.ErrChanged)}
		if err != nil && !out[i].Changed {
			ctrl.Log.WithName("failover").Error(err, "passing a name's ownership", "controller", p.Controller, "name", p.Hostname)
			reason, _ := azureprivatedns.Classify(err)
			out[i].Err, out[i].Reason = err, decide.Truncate(reason, 300)
		}
	}
	return out
}

// ownershipResult is a conditional ownership write's result as
// service_router_failover_ownership_writes_total counts it.
func ownershipResult(err error) string {
	switch {
	case err == nil:
		return metrics.OwnershipPassed
	case errors.Is(err, zonewriter.ErrChanged):
		return metrics.OwnershipChanged
	default:
		return metrics.OwnershipRefused
	}
}

// dialProbe is a probe of a gateway's data plane: the listener accepts a TCP connection.
func dialProbe(ctx context.Context, address string) error {
	d := net.Dialer{Timeout: probeTimeout}
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return err
	}
	return conn.Close()
}

// anyAnswers probes the addresses at port; true when one answers.
func (f *Loop) anyAnswers(ctx context.Context, addresses []string, port string) bool {
	results := make(chan error, len(addresses))
	for _, a := range addresses {
		go func() { results <- f.probe(ctx, net.JoinHostPort(a, port)) }()
	}
	answered := false
	for range addresses {
		if <-results == nil {
			answered = true
		}
	}
	return answered
}

// probeRegions probes every region's gateway addresses at once: whether any of each answered.
func (f *Loop) probeRegions(ctx context.Context, probes []failover.RegionProbe, port string) map[string]bool {
	out := make(map[string]bool, len(probes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range probes {
		wg.Go(func() {
			answered := f.anyAnswers(ctx, p.Addresses, port)
			mu.Lock()
			out[p.Region] = answered
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
