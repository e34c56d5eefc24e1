package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StartClusterDNS gives the world's pods the Service names a cluster's DNS (CoreDNS) answers:
// <service>.<namespace>.svc[.cluster.local] → the Service's ClusterIP, read from the API at each
// query. The world's kubelets have no clusterDNS, so every pod resolves with the node's
// resolv.conf (the kubelets' resolvConf, /etc/resolv.conf): a name server on the second node's
// address (the first's port 53 is BIND's in the tests that run it) is bind-mounted over
// /etc/resolv.conf in the suite's own mount namespace (RunInNetworkNamespace's; the host's file is
// untouched), for the pods created from then on, until the test ends. What needs it: OLM's
// catalog operator dials a CatalogSource's registry at service-router.olm.svc:50051.
func (w *NodeWorld) StartClusterDNS(ctx context.Context, c Cleanup) error {
	addr := net.JoinHostPort(NodeIP(2), "53")
	conn, err := net.ListenPacket("udp", addr)
	if err != nil {
		return fmt.Errorf("cluster DNS on %s: %w", addr, err)
	}
	server := &dns.Server{PacketConn: conn, Handler: dns.HandlerFunc(func(rw dns.ResponseWriter, q *dns.Msg) {
		_ = rw.WriteMsg(w.answerClusterDNS(ctx, q))
	})}
	go func() { _ = server.ActivateAndServe() }()
	c.Cleanup(func() { _ = server.Shutdown() })

	resolv := filepath.Join(w.Dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+NodeIP(2)+"\nsearch svc.cluster.local cluster.local\noptions ndots:5\n"), 0o644); err != nil {
		return err
	}
	if err := syscall.Mount(resolv, "/etc/resolv.conf", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting the cluster DNS' resolv.conf over /etc/resolv.conf: %w", err)
	}
	c.Cleanup(func() { _ = syscall.Unmount("/etc/resolv.conf", 0) })
	return nil
}

// answerClusterDNS answers A queries for Service names with their ClusterIP; anything else is
// NXDOMAIN (a name of a Service that does not exist, as CoreDNS answers) or empty (AAAA).
func (w *NodeWorld) answerClusterDNS(ctx context.Context, q *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if len(q.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		return m
	}
	question := q.Question[0]
	name := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(question.Name), "."), ".cluster.local")
	labels := strings.Split(name, ".")
	if len(labels) != 3 || labels[2] != "svc" {
		m.Rcode = dns.RcodeNameError
		return m
	}
	var svc corev1.Service
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: labels[1], Name: labels[0]}, &svc); err != nil {
		m.Rcode = dns.RcodeNameError
		return m
	}
	ip := net.ParseIP(svc.Spec.ClusterIP).To4()
	if question.Qtype == dns.TypeA && ip != nil {
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: question.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: ip})
	}
	return m
}
