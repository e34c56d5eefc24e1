package routerplan

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the result for people: the manifests, then per zone the records created (+),
// retargeted (~) and deleted (-), the routes whose state changes and why, the Istio hosts, the
// Gateway API listener hostnames and generated objects that change (when any), the guard's
// verdict and a summary line.
func WriteTable(w io.Writer, r Result) error {
	p := &printer{w: w}
	p.line("Manifests:")
	for _, m := range r.Manifests {
		note := ""
		if m.Note != "" {
			note = " (" + m.Note + ")"
		}
		p.line("  %-9s %s %s%s", m.Action, m.Kind, m.Object, note)
	}
	created, retargeted, deleted := 0, 0, 0
	for _, z := range r.Zones {
		created, retargeted, deleted = created+len(z.Created), retargeted+len(z.Retargeted), deleted+len(z.Deleted)
		region := ""
		if z.Region != "" {
			region = " (region " + z.Region + ")"
		}
		p.line("")
		if len(z.Created)+len(z.Retargeted)+len(z.Deleted) == 0 {
			p.line("Zone %s%s: no change", z.Controller, region)
			continue
		}
		p.line("Zone %s%s: %d created, %d retargeted, %d deleted", z.Controller, region, len(z.Created), len(z.Retargeted), len(z.Deleted))
		for _, rec := range z.Created {
			p.record("+", rec, rec.After, nil)
		}
		for _, rec := range z.Retargeted {
			p.record("~", rec, rec.After, rec.Before)
		}
		for _, rec := range z.Deleted {
			p.record("-", rec, rec.Before, nil)
		}
	}
	p.line("")
	if len(r.Routes) == 0 {
		p.line("Routes: no Ready or Published change")
	} else {
		p.line("Routes:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ROUTE\tREADY\tPUBLISHED\tWHY")
		for _, c := range r.Routes {
			fmt.Fprintf(tw, "  %s\t%s → %s\t%s → %s\t%s\n", c.Route, readyOf(c.Before), readyOf(c.After),
				publishedOf(c.Before), publishedOf(c.After), why(c.Before, c.After))
		}
		p.err = tw.Flush()
	}
	if len(r.Gateways) > 0 {
		p.line("")
		p.line("Gateways:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  GATEWAY\tREADY\tWHY")
		for _, g := range r.Gateways {
			why := g.After.Message
			if !g.After.Exists {
				why = "the Gateway is deleted; what it generated goes with it"
			}
			fmt.Fprintf(tw, "  %s\t%s → %s\t%s\n", g.Gateway, gatewayReady(g.Before), gatewayReady(g.After), why)
		}
		p.err = tw.Flush()
	}
	p.line("")
	if len(r.IstioHosts) == 0 {
		p.line("Istio hosts: no change")
	} else {
		p.line("Istio hosts:")
		for _, h := range r.IstioHosts {
			p.hosts("Gateway "+h.Gateway, h.Added, h.Removed)
		}
	}
	if len(r.GatewayAPIHosts) > 0 {
		p.line("")
		p.line("Gateway API hosts:")
		for _, h := range r.GatewayAPIHosts {
			p.hosts(h.Object, h.Added, h.Removed)
		}
	}
	if len(r.Objects) > 0 {
		p.line("")
		p.line("Generated objects:")
		signs := map[string]string{"create": "+", "change": "~", "delete": "-"}
		for _, o := range r.Objects {
			by := ""
			if o.By != "" {
				by = " (by the " + o.By + ")"
			}
			p.line("  %s %s %s%s", signs[o.Action], o.Kind, o.Object, by)
		}
	}
	p.line("")
	p.line("Mass-deletion guard: %s", r.Guard.Message)
	p.line("")
	p.line("Plan: %d DNSEndpoint(s) to create, %d to retarget, %d to delete; %d DNS name(s) leave their zone.", created, retargeted, deleted, r.RecordsRemoved)
	return p.err
}

// orNone is s, or "(none)" when it is empty.
func orNone(s string) string { return cmp.Or(s, "(none)") }

type printer struct {
	w   io.Writer
	err error
}

// hosts prints the hosts one object gains and loses.
func (p *printer) hosts(object string, added, removed []string) {
	p.line("  %s: %d added, %d removed", object, len(added), len(removed))
	for _, a := range added {
		p.line("    + %s", a)
	}
	for _, d := range removed {
		p.line("    - %s", d)
	}
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *printer) record(sign string, rec Record, lines, was []string) {
	by := ""
	if rec.By != "" {
		by = ", by the " + rec.By
	}
	p.line("  %s DNSEndpoint %s (%s%s)", sign, rec.DNSEndpoint, rec.Owner, by)
	for i, l := range lines {
		if i < len(was) && was[i] != l {
			p.line("      %s   (was %s)", l, was[i])
			continue
		}
		p.line("      %s", l)
	}
	for i := len(lines); i < len(was); i++ {
		p.line("      (was %s)", was[i])
	}
}

func gatewayReady(s GatewayState) string {
	if !s.Exists {
		return "(none)"
	}
	return orNone(strings.TrimSpace(s.Ready + " " + s.Reason))
}

func readyOf(s RouteState) string {
	if !s.Exists {
		return "(none)"
	}
	return strings.TrimSpace(s.Ready + " " + s.Reason)
}

func publishedOf(s RouteState) string {
	if !s.Exists {
		return "(none)"
	}
	if s.Published == "" && s.PublishedReason == "" {
		return "-"
	}
	return strings.TrimSpace(s.Published + " " + s.PublishedReason)
}

// why is the Ready message after the change, after what moves: the hostname and the target.
func why(before, after RouteState) string {
	if !after.Exists {
		return "the ServiceRoute is deleted; its records go with it"
	}
	var moves []string
	if before.Exists && before.Hostname != after.Hostname {
		moves = append(moves, fmt.Sprintf("hostname %s → %s", orNone(before.Hostname), orNone(after.Hostname)))
	}
	if before.Exists && before.Target != after.Target {
		moves = append(moves, fmt.Sprintf("target %s → %s", orNone(before.Target), orNone(after.Target)))
	}
	return strings.Join(append(moves, after.Message), "; ")
}
