package packaging

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

// Issue 56: the examples of one path of docs/INSTALLATION.md form one consistent set. A user who
// follows a path copies its blocks and applies its files together; a domain, an environment
// letter, a region, an owner ID or a TXT prefix that one block gives differently from another is
// a silent misconfiguration (ExternalDNS filtering out every name, or ownership records under a
// prefix no other cluster looks at).

// docPathSection is one part of a document a path follows, by its heading.
type docPathSection struct{ doc, heading string }

// docPath is one path of INSTALLATION.md's table: the sections a user follows and the files of
// the repository they apply or install from.
type docPath struct {
	name     string
	sections []docPathSection
	files    []string // relative to the repository root
	// clusterVar: the path's CLUSTER=<name> lines name the ClusterIdentity's spec.cluster.
	clusterVar bool
	// ownNames: every service hostname the path shows is one its own ServiceRoutes make, and the
	// path shows its Gateways' target hostnames (the path says what answers).
	ownNames bool
}

// docPaths are the paths checked. The quickstart applies config/samples (make demo-on-cluster);
// its CLUSTER= only names the values file of the kind or k3s cluster, whose name (kind) is not the
// samples' ClusterIdentity's.
func docPaths(t *testing.T) []docPath {
	t.Helper()
	var samples []string
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath("config", "samples", "kustomization.yaml"))), &kustomization))
	for _, f := range kustomization.Resources {
		samples = append(samples, filepath.Join("config", "samples", f))
	}
	externalDNSValues, err := filepath.Glob(repoPath("docs", "examples", "external-dns", "*-values.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, externalDNSValues)
	for i, f := range externalDNSValues {
		externalDNSValues[i], err = filepath.Rel(repoRoot, f)
		require.NoError(t, err)
	}
	return []docPath{
		{
			name:     "Quickstart",
			sections: []docPathSection{{"INSTALLATION.md", "### Five minutes on k3s or kind"}},
			files:    samples,
			ownNames: true,
		},
		{
			name:       "Homelab",
			sections:   []docPathSection{{"INSTALLATION.md", "### Homelab"}},
			files:      []string{"docs/examples/homelab/platform.yaml", "docs/examples/homelab/app.yaml"},
			clusterVar: true,
			ownNames:   true,
		},
		{
			name: "AKS",
			sections: []docPathSection{
				{"INSTALLATION.md", "### AKS"},
				{"OPERATOR-GUIDE.md", "### Verifying Azure Private DNS zones"},
				{"OPERATOR-GUIDE.md", "## Regional failover"},
				{"EXTERNALDNS-INTEGRATION.md", "### Azure Private DNS"},
			},
			files:      append(slices.Clone(samples), externalDNSValues...),
			clusterVar: true,
		},
	}
}

// pathValue is one value an example gives, and where.
type pathValue struct {
	value, where string
	// controller is the ExternalDNS controller the value is given for, when its block or file says
	// (an --annotation-filter, a DNSConfiguration entry, a values file's annotationFilter).
	controller string
	// region is the zone's region, when the value is given in a DNSConfiguration entry.
	region string
}

// pathExamples is what one path's blocks and files say.
type pathExamples struct {
	identities    []pathObject[clusterv1alpha1.ClusterIdentity]
	dnsConfigs    []pathObject[clusterv1alpha1.DNSConfiguration]
	gateways      []pathObject[routingv1alpha1.Gateway]
	routes        []pathObject[routingv1alpha1.ServiceRoute]
	objects       []pathObject[unstructured.Unstructured] // every API object, for the API server
	ownerIDs      []pathValue
	prefixes      []pathValue
	domains       []pathValue
	loops         []pathValue // the values of a shell loop over the zones, space-separated
	clusterVars   []pathValue
	externalDNSes []pathValue // ExternalDNS values files: value is the file's zone (weu-values.yaml: weu)
	text          []pathValue // every block and file, for the hostnames shown
	problems      []string    // what could not be read
}

type pathObject[T any] struct {
	obj   *T
	where string
}

var (
	flagValues      = regexp.MustCompile("--(txt-owner-id|txt-prefix|domain-filter|rfc2136-zone|annotation-filter)=((?:<[^>\n]+>|[^\\s\\\\`'\"<])+)")
	shellAssignment = regexp.MustCompile(`(?m)^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=([^\s$(){}"';]+)`)
	shellLoop       = regexp.MustCompile(`(?m)^\s*for ([A-Za-z_][A-Za-z0-9_]*) in ([^;\n]+); do`)
	helmOwnerID     = regexp.MustCompile(`txtOwnerId=(\S+)`)
	azureZoneName   = regexp.MustCompile(`private-dns zone show .*-n ("?)([a-z0-9.-]+)("?)`)
	serviceHostname = regexp.MustCompile(`\b[a-z0-9]+(?:-[a-z0-9]+)*-ns-([a-z0-9])-[a-z0-9]+(?:-[a-z0-9]+)*\.((?:[a-z0-9-]+\.)*[a-z]{2,})\b`)
)

// strictObject decodes one YAML document into the API type of its kind, failing on a field the
// type does not have.
func strictObject[T any](doc string) (*T, error) {
	obj := new(T)
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// yamlDocuments splits a YAML text at its --- lines.
func yamlDocuments(text string) []string {
	var docs []string
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(text, -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) != "" {
			docs = append(docs, doc)
		}
	}
	return docs
}

// dedent removes the indentation the lines of a block share (a fragment shown inside a list).
func dedent(text string) string {
	lines := strings.Split(text, "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			lines[i] = l[common:]
		}
	}
	return strings.Join(lines, "\n")
}

// readYAML reads one YAML document of a path: an object of the operator's API (decoded strictly
// into its type), a DNSConfiguration fragment (a spec, or its externalDNSControllers), ExternalDNS'
// container arguments or chart values; anything else (RBAC, chart values of the operator) is
// only text.
func (x *pathExamples) readYAML(doc, where, file string) {
	var head struct {
		APIVersion             string         `json:"apiVersion"`
		Kind                   string         `json:"kind"`
		Spec                   map[string]any `json:"spec"`
		ExternalDNSControllers []any          `json:"externalDNSControllers"`
		TXTPrefix              *string        `json:"txtPrefix"`
	}
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		x.problems = append(x.problems, fmt.Sprintf("%s: %v", where, err))
		return
	}
	fail := func(err error) { x.problems = append(x.problems, fmt.Sprintf("%s: %s: %v", where, head.Kind, err)) }
	group, _, _ := strings.Cut(head.APIVersion, "/")
	switch {
	case group == clusterv1alpha1.GroupVersion.Group || group == routingv1alpha1.GroupVersion.Group:
		var err error
		switch head.Kind {
		case "ClusterIdentity":
			var o *clusterv1alpha1.ClusterIdentity
			if o, err = strictObject[clusterv1alpha1.ClusterIdentity](doc); err == nil {
				x.identities = append(x.identities, pathObject[clusterv1alpha1.ClusterIdentity]{o, where})
			}
		case "DNSConfiguration":
			var o *clusterv1alpha1.DNSConfiguration
			if o, err = strictObject[clusterv1alpha1.DNSConfiguration](doc); err == nil {
				x.dnsConfigs = append(x.dnsConfigs, pathObject[clusterv1alpha1.DNSConfiguration]{o, where})
			}
		case "Gateway":
			var o *routingv1alpha1.Gateway
			if o, err = strictObject[routingv1alpha1.Gateway](doc); err == nil {
				x.gateways = append(x.gateways, pathObject[routingv1alpha1.Gateway]{o, where})
			}
		case "ServiceRoute":
			var o *routingv1alpha1.ServiceRoute
			if o, err = strictObject[routingv1alpha1.ServiceRoute](doc); err == nil {
				x.routes = append(x.routes, pathObject[routingv1alpha1.ServiceRoute]{o, where})
			}
		case "DNSPolicy":
			_, err = strictObject[routingv1alpha1.DNSPolicy](doc)
		default:
			err = fmt.Errorf("a kind this test does not know: add it")
		}
		if err != nil {
			fail(err)
			return
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			fail(err)
			return
		}
		x.objects = append(x.objects, pathObject[unstructured.Unstructured]{u, where})
	case head.APIVersion == "" && (head.ExternalDNSControllers != nil || head.Spec["externalDNSControllers"] != nil):
		// A DNSConfiguration shown in part: its spec, or the list of its controllers.
		if head.Spec == nil {
			doc = "spec:\n" + regexp.MustCompile(`(?m)^`).ReplaceAllString(doc, "  ")
		}
		o, err := strictObject[clusterv1alpha1.DNSConfiguration](doc)
		if err != nil {
			head.Kind = "DNSConfiguration (part)"
			fail(err)
			return
		}
		o.APIVersion, o.Kind, o.Name = clusterv1alpha1.GroupVersion.String(), "DNSConfiguration", clusterv1alpha1.DNSConfigurationName
		x.dnsConfigs = append(x.dnsConfigs, pathObject[clusterv1alpha1.DNSConfiguration]{o, where})
		data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			fail(err)
			return
		}
		x.objects = append(x.objects, pathObject[unstructured.Unstructured]{&unstructured.Unstructured{Object: data}, where})
	case head.APIVersion == "" && head.TXTPrefix != nil:
		// ExternalDNS' chart values (docs/examples/external-dns/<zone>-values.yaml).
		var values struct {
			AnnotationFilter string   `json:"annotationFilter"`
			DomainFilters    []string `json:"domainFilters"`
			TXTPrefix        string   `json:"txtPrefix"`
		}
		if err := yaml.Unmarshal([]byte(doc), &values); err != nil {
			fail(err)
			return
		}
		controller, _ := strings.CutPrefix(values.AnnotationFilter, naming.AnnotationController+"=")
		x.prefixes = append(x.prefixes, pathValue{value: values.TXTPrefix, where: where + " (txtPrefix)", controller: controller})
		for _, d := range values.DomainFilters {
			x.domains = append(x.domains, pathValue{value: d, where: where + " (domainFilters)", controller: controller})
		}
		zone, _ := strings.CutSuffix(filepath.Base(file), "-values.yaml")
		x.externalDNSes = append(x.externalDNSes, pathValue{value: zone, where: where, controller: controller})
	}
}

// readText reads the flags of a text, and, in a fenced block (shell), its variables and loops.
func (x *pathExamples) readText(text, where string, block bool) {
	x.text = append(x.text, pathValue{value: text, where: where})
	var controllers []string
	for _, m := range flagValues.FindAllStringSubmatch(text, -1) {
		if m[1] == "annotation-filter" {
			if c, ok := strings.CutPrefix(m[2], naming.AnnotationController+"="); ok && !strings.Contains(c, "<") {
				controllers = append(controllers, c)
			}
		}
	}
	controller := ""
	if len(controllers) == 1 {
		controller = controllers[0] // one ExternalDNS instance: its values are for that controller
	}
	for _, m := range flagValues.FindAllStringSubmatch(text, -1) {
		v := pathValue{value: strings.TrimRight(m[2], ".,;:)]"), where: where + " (--" + m[1] + ")", controller: controller}
		if strings.Contains(v.value, "<") {
			continue // a placeholder of a text describing every instance
		}
		switch m[1] {
		case "txt-owner-id":
			x.ownerIDs = append(x.ownerIDs, v)
		case "txt-prefix":
			x.prefixes = append(x.prefixes, v)
		case "domain-filter", "rfc2136-zone":
			x.domains = append(x.domains, v)
		}
	}
	for _, m := range azureZoneName.FindAllStringSubmatch(text, -1) {
		x.domains = append(x.domains, pathValue{value: m[2], where: where + " (az network private-dns zone show -n)"})
	}

	// The shell: CLUSTER=, loops over the zones, and owner IDs given to ExternalDNS' chart with the
	// block's own variables. Prose and files' comments only describe them.
	if !block {
		return
	}
	vars := map[string]string{}
	for _, m := range shellAssignment.FindAllStringSubmatch(text, -1) {
		vars[m[1]] = m[2]
		if m[1] == "CLUSTER" {
			x.clusterVars = append(x.clusterVars, pathValue{value: m[2], where: where + " (CLUSTER=)"})
		}
	}
	loops := map[string][]string{}
	for _, m := range shellLoop.FindAllStringSubmatch(text, -1) {
		loops[m[1]] = strings.Fields(m[2])
		x.loops = append(x.loops, pathValue{value: strings.Join(strings.Fields(m[2]), " "), where: where + " (for " + m[1] + " in)"})
	}
	for _, m := range helmOwnerID.FindAllStringSubmatch(text, -1) {
		expanded := []string{m[1]}
		for name, values := range loops {
			if !strings.Contains(m[1], "$"+name) && !strings.Contains(m[1], "${"+name+"}") {
				continue
			}
			var next []string
			for _, e := range expanded {
				for _, v := range values {
					next = append(next, os.Expand(e, func(k string) string {
						if k == name {
							return v
						}
						return "$" + k
					}))
				}
			}
			expanded = next
		}
		for _, e := range expanded {
			value := os.Expand(e, func(k string) string {
				if v, ok := vars[k]; ok {
					return v
				}
				x.problems = append(x.problems, fmt.Sprintf("%s: txtOwnerId=%s: $%s is set nowhere in the block", where, m[1], k))
				return "$" + k
			})
			x.ownerIDs = append(x.ownerIDs, pathValue{value: value, where: where + " (helm --set txtOwnerId=" + m[1] + ")"})
		}
	}
}

// readPath reads every fenced block of a path's sections and every file it names. read returns a
// file of the repository by its relative path (a test's control changes what it returns).
func readPath(t *testing.T, p docPath, read func(rel string) string) *pathExamples {
	t.Helper()
	x := &pathExamples{}
	for _, s := range p.sections {
		section := docSection(t, read(filepath.Join("docs", s.doc)), s.heading)
		var prose []string
		for _, line := range linesOutsideFences(section) {
			prose = append(prose, line)
		}
		x.readText(strings.Join(prose, "\n"), "docs/"+s.doc+" "+s.heading+" (prose)", false)
		for i, block := range codeBlocks(section, func(string) bool { return true }) {
			where := fmt.Sprintf("docs/%s %s, block %d", s.doc, s.heading, i+1)
			x.readText(block, where, true)
			if regexp.MustCompile(`(?m)^\s*(apiVersion|kind|spec|externalDNSControllers|args|txtPrefix):`).MatchString(block) {
				for _, doc := range yamlDocuments(dedent(block)) {
					x.readYAML(doc, where, "")
				}
			}
		}
	}
	for _, f := range p.files {
		text := read(f)
		x.readText(text, f, false)
		for _, doc := range yamlDocuments(text) {
			x.readYAML(doc, f, f)
		}
	}
	return x
}

// consistencyProblems checks a path's examples against each other and against the rules the
// docs give (EXTERNALDNS-INTEGRATION.md#deploying-externaldns, INSTALLATION.md#aks): owner ID
// <controller name>-<cluster>, TXT prefix <region>-<environment letter>- with the zone's region and
// the ClusterIdentity's letter, every zone's domain the ClusterIdentity's.
func consistencyProblems(p docPath, x *pathExamples) []string {
	problems := slices.Clone(x.problems)
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(x.identities) == 0 {
		return append(problems, "no ClusterIdentity: the path's domain and environment letter are nowhere")
	}
	first := x.identities[0]
	domain, letter := first.obj.Spec.Domain, first.obj.Spec.EnvironmentLetter
	clusters := sets.New[string]()
	byCluster := map[string]pathObject[clusterv1alpha1.ClusterIdentity]{}
	regions := sets.New[string]()
	for _, id := range x.identities {
		s := id.obj.Spec
		if s.Domain != domain || s.EnvironmentLetter != letter {
			add("%s: ClusterIdentity %s has domain %q and environment letter %q; %s has %q and %q",
				id.where, s.Cluster, s.Domain, s.EnvironmentLetter, first.where, domain, letter)
		}
		if other, ok := byCluster[s.Cluster]; ok && !equalSpecs(other.obj.Spec, s) {
			add("%s: the ClusterIdentity of cluster %s is %+v; %s gives it as %+v", id.where, s.Cluster, s, other.where, other.obj.Spec)
		}
		byCluster[s.Cluster] = id
		clusters.Insert(s.Cluster)
		regions.Insert(s.Region)
		regions.Insert(s.AdoptsRegions...)
	}

	// The ExternalDNS controllers: one region each, the same in every DNSConfiguration shown.
	controllers := map[string]string{}
	for _, c := range x.dnsConfigs {
		for _, ctl := range c.obj.Spec.ExternalDNSControllers {
			if r, ok := controllers[ctl.Name]; ok && r != ctl.Region {
				add("%s: controller %s writes region %s; another DNSConfiguration of the path says %s", c.where, ctl.Name, ctl.Region, r)
			}
			controllers[ctl.Name] = ctl.Region
			if ctl.Verification != nil && ctl.Verification.AzurePrivateDNS != nil {
				x.domains = append(x.domains, pathValue{value: ctl.Verification.AzurePrivateDNS.ZoneName,
					where: c.where + " (" + ctl.Name + " zoneName)", controller: ctl.Name})
			}
			if f := ctl.Failover; f != nil {
				x.ownerIDs = append(x.ownerIDs, pathValue{value: f.OwnerID, where: c.where + " (" + ctl.Name + " failover.ownerID)", controller: ctl.Name})
				x.prefixes = append(x.prefixes, pathValue{value: f.TXTPrefix, where: c.where + " (" + ctl.Name + " failover.txtPrefix)",
					controller: ctl.Name, region: ctl.Region})
			}
		}
	}
	zoneRegions := sets.New[string]()
	for _, r := range controllers {
		zoneRegions.Insert(r)
	}
	if len(controllers) == 0 {
		add("no DNSConfiguration: the path's ExternalDNS controllers and their regions are nowhere")
	}
	for r := range regions {
		if len(controllers) > 0 && !zoneRegions.Has(r) {
			add("a ClusterIdentity names region %s, which no ExternalDNS controller of the DNSConfiguration writes (%v)", r, sets.List(zoneRegions))
		}
	}
	controllerOf := func(v pathValue) (string, bool) {
		if v.controller == "" {
			return "", true
		}
		_, ok := controllers[v.controller]
		if !ok {
			add("%s: %q is for controller %s, which no DNSConfiguration of the path lists (%v)", v.where, v.value, v.controller, sets.List(sets.KeySet(controllers)))
		}
		return v.controller, ok
	}

	for _, v := range x.domains {
		if v.value != domain {
			add("%s: domain %q, but the ClusterIdentity's domain is %q (%s): the names the operator publishes end in it", v.where, v.value, domain, first.where)
		}
	}
	for _, v := range x.prefixes {
		c, ok := controllerOf(v)
		if !ok {
			continue
		}
		region := v.region
		if region == "" && c != "" {
			region = controllers[c]
		}
		if region == "" {
			// No controller named beside it: the prefix must be one of the zones'.
			var want []string
			for r := range zoneRegions {
				want = append(want, r+"-"+letter+"-")
			}
			if !slices.Contains(want, v.value) {
				add("%s: TXT prefix %q is none of <region>-<environment letter>- of the path's zones (%v)", v.where, v.value, want)
			}
			continue
		}
		if want := region + "-" + letter + "-"; v.value != want {
			add("%s: TXT prefix %q for the zone of region %s; <region>-<environment letter>- with the ClusterIdentity's letter %q is %q",
				v.where, v.value, region, letter, want)
		}
	}
	for _, v := range x.ownerIDs {
		c, ok := controllerOf(v)
		if !ok {
			continue
		}
		var want []string
		for name := range controllers {
			if c != "" && name != c {
				continue
			}
			for cl := range clusters {
				want = append(want, name+"-"+cl)
			}
		}
		if !slices.Contains(want, v.value) {
			slices.Sort(want)
			add("%s: owner ID %q is not <controller name>-<cluster> of the path's controllers and clusters: one of %v", v.where, v.value, want)
		}
	}
	for _, v := range x.loops {
		if got := sets.New(strings.Fields(v.value)...); !got.Equal(zoneRegions) {
			add("%s: loops over %v; the DNSConfiguration's zones are %v", v.where, sets.List(got), sets.List(zoneRegions))
		}
	}
	for _, v := range x.externalDNSes {
		if c, ok := controllerOf(v); ok && controllers[c] != v.value {
			add("%s: the values of zone %s select controller %q, whose region is %q", v.where, v.value, c, controllers[c])
		}
	}
	if p.clusterVar {
		for _, v := range x.clusterVars {
			if !clusters.Has(v.value) {
				add("%s: CLUSTER=%s, but the path's ClusterIdentities are of %v", v.where, v.value, sets.List(clusters))
			}
		}
	}

	// The names shown: the path's environment letter and domain; and, where the path says what
	// answers, the names its own routes and Gateways make.
	own := sets.New[string]()
	for _, r := range x.routes {
		s := r.obj.Spec
		own.Insert(naming.SourceHostname(s.ServiceName, letter, s.Environment, s.Application, domain))
	}
	for _, v := range x.text {
		for _, m := range serviceHostname.FindAllStringSubmatch(v.value, -1) {
			if m[1] != letter || m[2] != domain {
				add("%s: hostname %s, but the path's names are {service}-ns-%s-{environment}-{application}.%s", v.where, m[0], letter, domain)
			} else if p.ownNames && !own.Has(m[0]) {
				add("%s: hostname %s is none of the path's ServiceRoutes' (%v)", v.where, m[0], sets.List(own))
			}
		}
	}
	if p.ownNames {
		var all strings.Builder
		for _, v := range x.text {
			all.WriteString(v.value)
		}
		for _, g := range x.gateways {
			target := naming.TargetHostname(first.obj.Spec.Cluster, first.obj.Spec.Region, g.obj.Spec.TargetPostfix, domain)
			if !strings.Contains(all.String(), target) {
				add("%s: Gateway %s's target hostname %s is shown nowhere in the path", g.where, g.obj.Name, target)
			}
		}
	}
	return problems
}

// equalSpecs compares two ClusterIdentity specs.
func equalSpecs(a, b clusterv1alpha1.ClusterIdentitySpec) bool {
	return a.Region == b.Region && a.Cluster == b.Cluster && a.Domain == b.Domain &&
		a.EnvironmentLetter == b.EnvironmentLetter && slices.Equal(a.AdoptsRegions, b.AdoptsRegions)
}

// TestDocs_PathExamplesAreOneConsistentSet reads every fenced block (YAML, shell, ExternalDNS
// arguments, diagrams) of each path's sections and the files it applies, decodes the operator's
// objects strictly into the API types, and checks across them that the domain, the environment
// letter, the regions, the owner IDs (--txt-owner-id, failover.ownerID, the loop's txtOwnerId) and
// the TXT prefixes (--txt-prefix, txtPrefix) agree with each other and with the rules the docs
// state. The controls break one prefix, one domain and one field, and see each reported.
func TestDocs_PathExamplesAreOneConsistentSet(t *testing.T) {
	// The rules checked are the ones the docs state.
	installation := readFile(t, repoPath("docs", "INSTALLATION.md"))
	require.Contains(t, installation, "`--txt-prefix=<region>-<environment letter>-`", "INSTALLATION.md states the TXT prefix rule")
	require.Contains(t, installation, "`--txt-owner-id=<controller name>-<cluster>`", "INSTALLATION.md states the owner ID rule")

	read := func(rel string) string { return readFile(t, repoPath(rel)) }
	paths := docPaths(t)
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			x := readPath(t, p, read)
			for _, problem := range consistencyProblems(p, x) {
				t.Error(problem)
			}
			// A path that shows fewer values than it did fails here instead of passing unchecked.
			assert.NotEmpty(t, x.identities, "ClusterIdentities")
			assert.NotEmpty(t, x.dnsConfigs, "DNSConfigurations")
			if p.name != "Quickstart" {
				assert.NotEmpty(t, x.prefixes, "TXT prefixes")
				assert.NotEmpty(t, x.ownerIDs, "owner IDs")
				assert.NotEmpty(t, x.domains, "zone domains")
			}
			t.Logf("%s: %d ClusterIdentities, %d DNSConfigurations, %d objects, %d TXT prefixes, %d owner IDs, %d domains, %d loops",
				p.name, len(x.identities), len(x.dnsConfigs), len(x.objects), len(x.prefixes), len(x.ownerIDs), len(x.domains), len(x.loops))
		})
	}

	// The controls: the AKS path with one thing changed in one place.
	aks := paths[len(paths)-1]
	require.Equal(t, "AKS", aks.name)
	for _, c := range []struct{ name, file, old, new, want string }{
		{"a failover txtPrefix of the production letter", "docs/OPERATOR-GUIDE.md", "txtPrefix: weu-d-", "txtPrefix: weu-p-",
			`TXT prefix "weu-p-" for the zone of region weu`},
		{"a values file's domain", "docs/examples/external-dns/neu-values.yaml", "  - example.com\n", "  - aks.example.com\n",
			`domain "aks.example.com", but the ClusterIdentity's domain is "example.com"`},
		{"an unknown field", "docs/INSTALLATION.md", "  environmentLetter: d\n", "  environmentLetter: d\n  environment: dev\n",
			`unknown field "environment"`},
		{"an owner ID of another cluster", "docs/INSTALLATION.md", "--txt-owner-id=external-dns-weu-aks01", "--txt-owner-id=external-dns-weu-aks03",
			`owner ID "external-dns-weu-aks03" is not <controller name>-<cluster>`},
	} {
		t.Run("control: "+c.name, func(t *testing.T) {
			changed := func(rel string) string {
				text := read(rel)
				if rel == c.file {
					if !strings.Contains(text, c.old) {
						t.Fatalf("the control's text %q is gone from %s", c.old, rel)
					}
					text = strings.Replace(text, c.old, c.new, 1)
				}
				return text
			}
			problems := consistencyProblems(aks, readPath(t, aks, changed))
			assert.True(t, slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }),
				"want a problem saying %q, got:\n%s", c.want, strings.Join(problems, "\n"))
		})
	}
}

// TestDocs_PathExamplesAcceptedTogetherByTheAPIServer applies each path's objects (its
// ClusterIdentities, DNSConfigurations, Gateways, DNSPolicies and ServiceRoutes, fragments
// completed with their kind and name) to a real API server with the operator's CRDs, as a dry run
// with strict field validation: the CRDs' schemas and CEL rules accept every one, and no field is
// dropped as unknown. A dry run, because the path's singletons (cluster-identity, dns-config) are
// given once per cluster and other tests of the package create the samples for real.
func TestDocs_PathExamplesAcceptedTogetherByTheAPIServer(t *testing.T) {
	env := controlPlane(t)
	ctx := context.Background()
	c := env.Client
	read := func(rel string) string { return readFile(t, repoPath(rel)) }
	for _, p := range docPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			x := readPath(t, p, read)
			require.Empty(t, x.problems)
			require.NotEmpty(t, x.objects)
			for _, o := range x.objects {
				obj := o.obj.DeepCopy()
				if ns := obj.GetNamespace(); ns != "" {
					err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
					if err != nil && !apierrors.IsAlreadyExists(err) {
						t.Fatalf("creating namespace %s: %v", ns, err)
					}
				}
				err := c.Create(ctx, obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
				if apierrors.IsAlreadyExists(err) {
					// Another test's object of that name: the path's replaces it, as an apply would.
					existing := &unstructured.Unstructured{}
					existing.SetGroupVersionKind(obj.GroupVersionKind())
					require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), existing))
					obj.SetResourceVersion(existing.GetResourceVersion())
					err = c.Update(ctx, obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
				}
				assert.NoError(t, err, "%s: %s %s/%s", o.where, obj.GetKind(), obj.GetNamespace(), obj.GetName())
			}
		})
	}
	// The control: a field the CRD does not have is refused, not dropped.
	t.Run("control: an unknown field", func(t *testing.T) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": clusterv1alpha1.GroupVersion.String(), "kind": "ClusterIdentity",
			"metadata": map[string]any{"name": clusterv1alpha1.ClusterIdentityName},
			"spec":     map[string]any{"region": "weu", "cluster": "aks01", "domain": "example.com", "environmentLetter": "d", "environment": "dev"},
		}}
		err := c.Create(ctx, obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
		if apierrors.IsAlreadyExists(err) {
			t.Skip("a ClusterIdentity exists: the control needs a create")
		}
		require.Error(t, err)
		assert.Contains(t, err.Error(), `unknown field "spec.environment"`)
	})
}
