package packaging

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	readVerbs = []string{"get", "list", "watch"}
	// Verbs that hand out more than access to objects: nobody here needs them.
	dangerousVerbs = []string{"*", "escalate", "bind", "impersonate", "approve", "sign"}
)

// writableByOperator lists what the operator may change, and how: the objects it generates (the
// write step creates, updates and deletes them: never a patch), the status of its own resources
// (one merge patch per reconcile: never an update), events, its leader-election Lease and the
// reviews of the secure metrics endpoint. Everything else it may at most read.
var writableByOperator = map[string][]string{
	"externaldns.k8s.io/dnsendpoints":           {"create", "update", "delete"},
	"networking.istio.io/gateways":              {"create", "update", "delete"},
	"gateway.networking.k8s.io/gateways":        {"create", "update", "delete"},
	"gateway.networking.k8s.io/listenersets":    {"create", "update", "delete"},
	"gateway.networking.k8s.io/httproutes":      {"create", "update", "delete"},
	"gateway.networking.k8s.io/referencegrants": {"create", "update", "delete"},
	"/events":                                    {"create", "update", "patch"},
	"events.k8s.io/events":                       {"create", "update", "patch"},
	"coordination.k8s.io/leases":                 {"create", "update", "patch"},
	"authentication.k8s.io/tokenreviews":         {"create"},
	"authorization.k8s.io/subjectaccessreviews":  {"create"},
	"cluster.router.io/clusteridentities/status": {"patch"},
	"cluster.router.io/dnsconfigurations/status": {"patch"},
	"routing.router.io/gateways/status":          {"patch"},
	"routing.router.io/dnspolicies/status":       {"patch"},
	"routing.router.io/serviceroutes/status":     {"patch"},
}

// roleOf converts a rendered Role or ClusterRole.
func roleOf(t *testing.T, obj *unstructured.Unstructured) *rbacv1.ClusterRole {
	t.Helper()
	role := &rbacv1.ClusterRole{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role); err != nil {
		t.Fatalf("converting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return role
}

// subjectRoles returns the Roles and ClusterRoles among objs that bindings among objs grant to the
// service account namespace/name, by "Kind/name".
func subjectRoles(t *testing.T, objs []*unstructured.Unstructured, namespace, name string) map[string]*rbacv1.ClusterRole {
	t.Helper()
	out := map[string]*rbacv1.ClusterRole{}
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		binding := &rbacv1.RoleBinding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, binding); err != nil {
			t.Fatalf("converting %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		bound := slices.ContainsFunc(binding.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == name && s.Namespace == namespace
		})
		if !bound {
			continue
		}
		role := findObject(t, objs, binding.RoleRef.Kind, binding.RoleRef.Name)
		out[binding.RoleRef.Kind+"/"+binding.RoleRef.Name] = roleOf(t, role)
	}
	return out
}

// leastPrivilegeViolations lists every way rules grant the operator more than writableByOperator
// and read access allow.
func leastPrivilegeViolations(rules []rbacv1.PolicyRule) []string {
	var problems []string
	for _, rule := range rules {
		desc := fmt.Sprintf("rule %v %v %v", rule.APIGroups, rule.Resources, rule.Verbs)
		for _, v := range rule.Verbs {
			if slices.Contains(dangerousVerbs, v) {
				problems = append(problems, fmt.Sprintf("%s: verb %q", desc, v))
			}
		}
		if len(rule.NonResourceURLs) > 0 {
			problems = append(problems, fmt.Sprintf("%s: non-resource URLs %v", desc, rule.NonResourceURLs))
		}
		for _, g := range rule.APIGroups {
			if g == "*" {
				problems = append(problems, desc+": every API group")
			}
			for _, r := range rule.Resources {
				key := g + "/" + r
				switch {
				case r == "*" || strings.HasSuffix(r, "/*"):
					problems = append(problems, desc+": every resource")
				case r == "secrets" && g == "":
					problems = append(problems, desc+": access to Secrets")
				}
				for _, v := range rule.Verbs {
					if slices.Contains(readVerbs, v) || slices.Contains(dangerousVerbs, v) {
						continue
					}
					if !slices.Contains(writableByOperator[key], v) {
						problems = append(problems, fmt.Sprintf("%s: %s on %s", desc, v, key))
					}
				}
			}
		}
	}
	return problems
}

// noWildcardsOrSecrets lists wildcards, dangerous verbs and Secret access in any role.
func noWildcardsOrSecrets(role *rbacv1.ClusterRole) []string {
	var problems []string
	for _, rule := range role.Rules {
		for _, v := range rule.Verbs {
			if slices.Contains(dangerousVerbs, v) {
				problems = append(problems, fmt.Sprintf("%s: verb %q", role.Name, v))
			}
		}
		for _, g := range rule.APIGroups {
			if g == "*" {
				problems = append(problems, role.Name+": every API group")
			}
		}
		for _, r := range rule.Resources {
			if r == "*" || strings.HasSuffix(r, "/*") {
				problems = append(problems, role.Name+": every resource")
			}
			if r == "secrets" && slices.Contains(rule.APIGroups, "") {
				problems = append(problems, role.Name+": access to Secrets")
			}
		}
	}
	return problems
}

// chartRBACSources maps each config/rbac file to the object `make chart-rbac` generates from it,
// as rendered with the default values.
var chartRBACSources = []struct {
	source, kind, name string
}{
	{"role.yaml", "ClusterRole", "service-router-operator"},
	{"leader_election_role.yaml", "Role", "service-router-operator-leader-election"},
	{"metrics_auth_role.yaml", "ClusterRole", "service-router-operator-metrics-auth"},
	{"metrics_reader_role.yaml", "ClusterRole", "service-router-operator-metrics-reader"},
	{"platform_admin_role.yaml", "ClusterRole", "service-router-platform-admin"},
	{"infrastructure_editor_role.yaml", "ClusterRole", "service-router-infrastructure-editor"},
	{"editor_role.yaml", "ClusterRole", "service-router-editor"},
	{"viewer_role.yaml", "ClusterRole", "service-router-viewer"},
	{"gateway_reader_role.yaml", "ClusterRole", "service-router-gateway-reader"},
	{"plan_reader_role.yaml", "ClusterRole", "service-router-plan-reader"},
}

// aggregationLabels returns the aggregate-to-* labels of a role.
func aggregationLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if strings.Contains(k, "/aggregate-to-") {
			out[k] = v
		}
	}
	return out
}

func TestChartRBAC_MatchesConfigRBAC(t *testing.T) {
	requireOperatorRole(t)
	rendered := renderChart(t)
	for _, src := range chartRBACSources {
		t.Run(src.source, func(t *testing.T) {
			sources := readObjects(t, "config", "rbac", src.source)
			require.Len(t, sources, 1, "config/rbac/%s must hold one object", src.source)
			want := roleOf(t, sources[0])
			got := roleOf(t, findObject(t, rendered, src.kind, src.name))
			const fix = "the chart's RBAC is generated from config/rbac: run `make chart-rbac` and commit, never edit templates/rbac by hand"
			require.Equal(t, want.Rules, got.Rules, "rules of %s %s differ from config/rbac/%s; %s", src.kind, src.name, src.source, fix)
			require.Equal(t, want.AggregationRule, got.AggregationRule, "aggregationRule differs; %s", fix)
			require.Equal(t, aggregationLabels(want.Labels), aggregationLabels(got.Labels), "aggregation labels differ; %s", fix)
		})
	}
}

func TestChartRBAC_EveryRoleInChartHasASource(t *testing.T) {
	requireOperatorRole(t)
	rendered := renderChart(t)
	var known []string
	for _, src := range chartRBACSources {
		known = append(known, src.kind+"/"+src.name)
	}
	for _, o := range rendered {
		if o.GetKind() == "Role" || o.GetKind() == "ClusterRole" {
			require.Contains(t, known, o.GetKind()+"/"+o.GetName(),
				"%s %s has no source in config/rbac: add one there and a line to chart-rbac in hack/make/chart.mk", o.GetKind(), o.GetName())
		}
	}
}

func TestChartRBAC_OperatorHasLeastPrivilege(t *testing.T) {
	requireOperatorRole(t)
	rendered := renderChart(t)
	roles := subjectRoles(t, rendered, releaseNamespace, releaseName)
	var names []string
	for name := range roles {
		names = append(names, name)
	}
	sort.Strings(names)
	require.Equal(t, []string{
		"ClusterRole/service-router-operator",
		"ClusterRole/service-router-operator-metrics-auth",
		"Role/service-router-operator-leader-election",
	}, names, "the operator's service account is bound to exactly its own roles")

	for name, role := range roles {
		require.Empty(t, leastPrivilegeViolations(role.Rules), "%s grants the operator more than it needs", name)
	}
}

func TestConfigRBAC_OperatorHasLeastPrivilege(t *testing.T) {
	requireOperatorRole(t)
	for _, file := range []string{"role.yaml", "leader_election_role.yaml", "metrics_auth_role.yaml"} {
		for _, obj := range readObjects(t, "config", "rbac", file) {
			require.Empty(t, leastPrivilegeViolations(roleOf(t, obj).Rules), "config/rbac/%s grants the operator more than it needs", file)
		}
	}
}

// The generated role must let the operator do its job: read its inputs, write the generated
// objects and the status of its resources.
func TestConfigRBAC_OperatorCanDoItsJob(t *testing.T) {
	requireOperatorRole(t)
	var rules []rbacv1.PolicyRule
	for _, obj := range readObjects(t, "config", "rbac", "role.yaml") {
		rules = append(rules, roleOf(t, obj).Rules...)
	}
	allows := func(group, resource, verb string) bool {
		return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
		})
	}
	need := map[string][]string{
		"cluster.router.io/clusteridentities":        readVerbs,
		"cluster.router.io/dnsconfigurations":        readVerbs,
		"routing.router.io/gateways":                 readVerbs,
		"routing.router.io/dnspolicies":              readVerbs,
		"routing.router.io/serviceroutes":            readVerbs,
		"cluster.router.io/clusteridentities/status": {"patch"},
		"cluster.router.io/dnsconfigurations/status": {"patch"},
		"routing.router.io/gateways/status":          {"patch"},
		"routing.router.io/dnspolicies/status":       {"patch"},
		"routing.router.io/serviceroutes/status":     {"patch"},
		"externaldns.k8s.io/dnsendpoints":            {"get", "list", "watch", "create", "update", "delete"},
		"networking.istio.io/gateways":               {"get", "list", "watch", "create", "update", "delete"},
		"gateway.networking.k8s.io/gateways":         {"get", "list", "watch", "create", "update", "delete"},
		"gateway.networking.k8s.io/listenersets":     {"get", "list", "watch", "create", "update", "delete"},
		"gateway.networking.k8s.io/httproutes":       {"get", "list", "watch", "create", "update", "delete"},
		"gateway.networking.k8s.io/referencegrants":  {"get", "list", "watch", "create", "update", "delete"},
		"/services":   readVerbs,
		"/namespaces": readVerbs,
	}
	for key, verbs := range need {
		group, resource, _ := strings.Cut(key, "/")
		for _, verb := range verbs {
			require.True(t, allows(group, resource, verb),
				"config/rbac/role.yaml does not allow %s on %s: a +kubebuilder:rbac marker is missing in controllers/", verb, key)
		}
	}
}

func TestChartRBAC_UserRoles(t *testing.T) {
	rendered := renderChart(t)
	role := func(name string) *rbacv1.ClusterRole { return roleOf(t, findObject(t, rendered, "ClusterRole", name)) }

	for _, o := range append(objectsOfKind(rendered, "ClusterRole"), objectsOfKind(rendered, "Role")...) {
		require.Empty(t, noWildcardsOrSecrets(roleOf(t, o)))
	}

	viewer := role("service-router-viewer")
	for _, rule := range viewer.Rules {
		for _, v := range rule.Verbs {
			require.Contains(t, readVerbs, v, "the viewer role must be read-only")
		}
		require.NotContains(t, rule.APIGroups, "cluster.router.io", "application-team roles must not reach cluster-wide configuration")
	}

	editor := role("service-router-editor")
	for _, rule := range editor.Rules {
		require.NotContains(t, rule.APIGroups, "cluster.router.io", "application-team roles must not reach cluster-wide configuration")
		if slices.Contains(rule.Resources, "gateways") {
			require.Subset(t, readVerbs, rule.Verbs, "application teams reference Gateways, they do not change them")
		}
		for _, r := range rule.Resources {
			if strings.HasSuffix(r, "/status") {
				require.Subset(t, readVerbs, rule.Verbs, "only the operator writes status")
			}
		}
	}

	// Namespace owners get the application-team roles through the built-in roles, never the
	// infrastructure ones: a Gateway decides where a target hostname resolves.
	builtIn := []string{"rbac.authorization.k8s.io/aggregate-to-admin", "rbac.authorization.k8s.io/aggregate-to-edit", "rbac.authorization.k8s.io/aggregate-to-view"}
	require.Equal(t, "true", editor.Labels["rbac.authorization.k8s.io/aggregate-to-edit"])
	require.Equal(t, "true", viewer.Labels["rbac.authorization.k8s.io/aggregate-to-view"])
	for _, name := range []string{"service-router-infrastructure-editor", "service-router-platform-admin"} {
		r := role(name)
		for _, label := range builtIn {
			require.NotContains(t, r.Labels, label, "%s must not be aggregated into the built-in roles", name)
		}
	}

	// Application teams read the DNSEndpoints of their namespace (the docs tell them to) and
	// never write one: ExternalDNS publishes a DNSEndpoint as it stands, for any hostname.
	readsEndpoints := false
	for _, r := range []*rbacv1.ClusterRole{viewer, editor} {
		for _, rule := range r.Rules {
			if slices.Contains(rule.APIGroups, "externaldns.k8s.io") {
				require.Subset(t, readVerbs, rule.Verbs, "%s: application teams never write DNSEndpoints", r.Name)
				readsEndpoints = readsEndpoints || slices.Contains(rule.Resources, "dnsendpoints") && slices.Contains(rule.Verbs, "list")
			}
		}
	}
	require.True(t, readsEndpoints, "the roles aggregated into view and edit let a team list its DNSEndpoints")

	// gateway-reader is bound by the platform in the Gateways' namespaces: Gateways only, read
	// only, and carried by no built-in role.
	gatewayReader := role("service-router-gateway-reader")
	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"routing.router.io"}, Resources: []string{"gateways"}, Verbs: readVerbs}}, gatewayReader.Rules)
	require.Empty(t, aggregationLabels(gatewayReader.Labels), "gateway-reader is bound where the platform chooses, never aggregated")

	// plan-reader is bound cluster-wide to whoever previews changes: get and list only, get of
	// the operator's own CRDs by name and of no other, and carried by no built-in role (it reads
	// every namespace and the cluster configuration).
	planReader := role("service-router-plan-reader")
	for _, rule := range planReader.Rules {
		if slices.Contains(rule.APIGroups, "apiextensions.k8s.io") {
			require.Equal(t, []string{"get"}, rule.Verbs, "plan-reader reads the CRDs it validates with")
			require.Len(t, rule.ResourceNames, 5, "the operator's five CRDs, no other")
			continue
		}
		require.Equal(t, []string{"get", "list"}, rule.Verbs, "plan-reader only reads")
	}
	require.Empty(t, aggregationLabels(planReader.Labels), "plan-reader is bound where the platform chooses, never aggregated")

	admin := role("service-router-platform-admin")
	require.NotNil(t, admin.AggregationRule, "platform-admin aggregates its rules")
	selector := map[string]string{"router.io/aggregate-to-platform-admin": "true"}
	require.Equal(t, []map[string]string{selector}, func() (out []map[string]string) {
		for _, s := range admin.AggregationRule.ClusterRoleSelectors {
			out = append(out, s.MatchLabels)
		}
		return out
	}())
	for _, name := range []string{"service-router-infrastructure-editor", "service-router-editor"} {
		require.Equal(t, "true", role(name).Labels["router.io/aggregate-to-platform-admin"], "%s is part of platform-admin", name)
	}
}

// The least-privilege check must catch what it is there for.
func TestLeastPrivilegeViolations(t *testing.T) {
	rule := func(group, resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
	}
	cases := []struct {
		name string
		rule rbacv1.PolicyRule
		want string
	}{
		{"read anything but secrets", rule("", "services", "get", "list", "watch"), ""},
		{"write generated objects", rule("externaldns.k8s.io", "dnsendpoints", "create", "update", "delete"), ""},
		{"patch generated objects (never done)", rule("externaldns.k8s.io", "dnsendpoints", "patch"), "patch on externaldns.k8s.io/dnsendpoints"},
		{"write status", rule("routing.router.io", "serviceroutes/status", "patch"), ""},
		{"update status (never done)", rule("routing.router.io", "serviceroutes/status", "update"), "update on routing.router.io/serviceroutes/status"},
		{"every verb", rule("", "services", "*"), `verb "*"`},
		{"every resource", rule("routing.router.io", "*", "get"), "every resource"},
		{"every group", rule("*", "services", "get"), "every API group"},
		{"secrets", rule("", "secrets", "get"), "access to Secrets"},
		{"write own resources", rule("routing.router.io", "serviceroutes", "update"), "update on routing.router.io/serviceroutes"},
		{"write services", rule("", "services", "patch"), "patch on /services"},
		{"delete leases", rule("coordination.k8s.io", "leases", "delete"), "delete on coordination.k8s.io/leases"},
		{"escalate", rule("rbac.authorization.k8s.io", "clusterroles", "escalate"), `verb "escalate"`},
		{"non-resource URLs", rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}, "non-resource URLs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(leastPrivilegeViolations([]rbacv1.PolicyRule{tc.rule}), "; ")
			if tc.want == "" {
				require.Empty(t, got)
			} else {
				require.Contains(t, got, tc.want)
			}
		})
	}
}
