package integration

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
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// The markers that tell the test who a part of docs/USER-GUIDE.md is written for.
const (
	// appTeamMarker, in an HTML comment right under a "## " heading, says the whole section is
	// for application teams: its manifests are applied and its kubectl commands run as a team.
	appTeamMarker = "<!-- audience: application team"
	// platformForTeamMarker, in an HTML comment before a fenced block, says the block's commands
	// are what the platform runs for a team (its role bindings): run as cluster admin, first.
	platformForTeamMarker = "<!-- audience: platform, for the application team"
	// notesMarker, in a template comment of the chart's NOTES.txt, precedes the kubectl lines
	// for application teams.
	notesMarker = "application-team commands:"
)

// appTeamDocs is what the docs give an application team, in the order they give it.
type appTeamDocs struct {
	platformCommands []string // the platform's grants for the team, run as admin
	manifests        []string // complete manifests (apiVersion and kind) to apply as the team
	commands         []string // kubectl command lines to run as the team
}

var (
	fenceRE      = regexp.MustCompile("^\\s*```")
	inlineCodeRE = regexp.MustCompile("`(kubectl [^`]+)`")
	// A shell comment after a command: at least one blank, then # and a blank.
	trailingCommentRE = regexp.MustCompile(`\s+#\s.*$`)
)

// parseUserGuide extracts the application team's part of a user guide written in Markdown:
// every section marked with appTeamMarker (fenced sh blocks: one command per line starting with
// kubectl; yaml blocks holding a whole object; inline `kubectl ...` code in the prose), and the
// fenced block after platformForTeamMarker.
func parseUserGuide(text string) appTeamDocs {
	var docs appTeamDocs
	lines := strings.Split(text, "\n")
	inTeamSection, platformBlockNext := false, false
	var prose strings.Builder
	flushProse := func() {
		if inTeamSection {
			joined := strings.Join(strings.Fields(prose.String()), " ")
			for _, m := range inlineCodeRE.FindAllStringSubmatch(joined, -1) {
				docs.commands = append(docs.commands, m[1])
			}
		}
		prose.Reset()
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "## "), strings.HasPrefix(line, "# "):
			flushProse()
			inTeamSection = false
		case strings.Contains(line, appTeamMarker):
			inTeamSection = true
		case strings.Contains(line, platformForTeamMarker):
			platformBlockNext = true
		case fenceRE.MatchString(line):
			flushProse()
			info := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "`"))
			var block []string
			for i++; i < len(lines) && !fenceRE.MatchString(lines[i]); i++ {
				block = append(block, lines[i])
			}
			body := dedent(block)
			switch {
			case platformBlockNext:
				docs.platformCommands = append(docs.platformCommands, kubectlLines(body)...)
				platformBlockNext = false
			case inTeamSection && info == "sh":
				docs.commands = append(docs.commands, kubectlLines(body)...)
			case inTeamSection && info == "yaml" && isWholeObject(strings.Join(body, "\n")):
				docs.manifests = append(docs.manifests, strings.Join(body, "\n"))
			}
		default:
			prose.WriteString(line + "\n")
		}
	}
	flushProse()
	return docs
}

// dedent removes the indentation of a fenced block inside a list item.
func dedent(block []string) []string {
	indent := -1
	for _, l := range block {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(block))
	for i, l := range block {
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		out[i] = l
	}
	return out
}

// kubectlLines returns the lines of a shell block that run kubectl, without trailing comments.
func kubectlLines(block []string) []string {
	var out []string
	for _, l := range block {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "kubectl ") {
			out = append(out, trailingCommentRE.ReplaceAllString(l, ""))
		}
	}
	return out
}

func isWholeObject(manifest string) bool {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		return false
	}
	return obj["apiVersion"] != nil && obj["kind"] != nil
}

// parseNotes returns the kubectl lines that follow notesMarker in the chart's NOTES.txt.
func parseNotes(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.Contains(l, notesMarker) {
			continue
		}
		for _, next := range lines[i+1:] {
			next = strings.TrimSpace(next)
			if !strings.HasPrefix(next, "kubectl ") {
				break
			}
			out = append(out, next)
		}
	}
	return out
}

func TestParseUserGuide_FindsWhatIsMarked(t *testing.T) {
	guide := "# Guide\n\n## Platform\n\n`kubectl get rgw -A` is for the platform.\n\n" +
		"1. Grants:\n\n   " + platformForTeamMarker + " -->\n\n   ```sh\n   kubectl create rolebinding a -n x --clusterrole=edit --group=g\n   ```\n\n" +
		"## Team\n\n" + appTeamMarker + " -->\n\nRun `kubectl get sr\n  -n myapp` and\n\n" +
		"```yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: myapp}\n```\n\n```yaml\nspec:\n  mode: Active\n```\n\n" +
		"```sh\nkubectl get dnsendpoints -n myapp   # the records\n# NAME  AGE\nkubectl get sr -n myapp -o custom-columns='R:.status.conditions[?(@.type==\"Ready\")].reason'\n```\n\n" +
		"## Later\n\n`kubectl get dnscfg` is not for the team.\n"
	docs := parseUserGuide(guide)
	assert.Equal(t, []string{"kubectl create rolebinding a -n x --clusterrole=edit --group=g"}, docs.platformCommands)
	assert.Equal(t, []string{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: myapp}"}, docs.manifests)
	assert.ElementsMatch(t, []string{
		"kubectl get sr -n myapp",
		"kubectl get dnsendpoints -n myapp",
		`kubectl get sr -n myapp -o custom-columns='R:.status.conditions[?(@.type=="Ready")].reason'`,
	}, docs.commands)

	notes := "Then:\n{{- /* " + notesMarker + " ... */}}\n  kubectl get sr -n myapp\n  kubectl get dnsp -n myapp\n{{- if .X }}\n  kubectl get cid\n"
	assert.Equal(t, []string{"kubectl get sr -n myapp", "kubectl get dnsp -n myapp"}, parseNotes(notes))
}

// The names of the docs' example world.
const (
	docsTeamNamespace    = "myapp"
	docsGatewayNamespace = "istio-system"
	docsTeamGroup        = "myapp-developers"
	docsTeamUser         = "alice@myapp.example.com"
)

// TestAppTeamDocs_EveryDocumentedCommandWorksWithEditInTheNamespace follows docs/USER-GUIDE.md
// and the chart's NOTES.txt as an application team: the platform grants what the guide says it
// grants (edit in myapp, the Gateway reader role in istio-system, VirtualServices), then every
// manifest the guide gives the team is applied and every kubectl command it gives the team is
// run, verbatim, through bin/kubectl as a user of group myapp-developers (impersonated). Each must
// succeed; none may answer Forbidden. The same user is refused what the team must not have
// (writing DNSEndpoints, reading other namespaces), which shows that the commands succeed
// through the documented roles and nothing more.
func TestAppTeamDocs_EveryDocumentedCommandWorksWithEditInTheNamespace(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(env.RepoRoot, "docs", "USER-GUIDE.md"))
	require.NoError(t, err)
	notes, err := os.ReadFile(filepath.Join(env.RepoRoot, "charts", "service-router-operator", "templates", "NOTES.txt"))
	require.NoError(t, err)
	docs := parseUserGuide(string(guide))
	notesCommands := parseNotes(string(notes))
	for _, c := range notesCommands {
		require.NotContains(t, c, "{{", "an application-team line of NOTES.txt must render as written")
	}

	// The markers must still find the journey: the grants, the team's manifests, and the
	// commands the issue was about (the team's DNSEndpoints, the Gateways it may use).
	require.Len(t, docs.manifests, 3, "DNSPolicy, ServiceRoute and VirtualService of the application-team section")
	require.True(t, anyContains(docs.platformCommands, "--clusterrole=edit"), "the platform grants edit: %q", docs.platformCommands)
	require.True(t, anyContains(docs.platformCommands, "--clusterrole=service-router-gateway-reader"), "the platform grants the Gateway reader role: %q", docs.platformCommands)
	require.True(t, anyContains(docs.commands, "kubectl get dnsendpoints"), "commands: %q", docs.commands)
	require.True(t, anyContains(docs.commands, "kubectl get rgw"), "commands: %q", docs.commands)
	require.GreaterOrEqual(t, len(docs.commands), 8, "commands: %q", docs.commands)
	require.NotEmpty(t, notesCommands, "NOTES.txt's application-team lines")

	// The platform's side, as in the user guide's first part: cluster identity, one verified
	// zone, the shared Gateway in istio-system with its ingress Service.
	keepSingletons(t)
	ctx := context.Background()
	zone := startZone(t)
	identity := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName}}
	_, err = createOrUpdate(ctx, identity, func() error { identity.Spec = weuIdentity(); return nil })
	require.NoError(t, err)
	dnsConfig := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
	_, err = createOrUpdate(ctx, dnsConfig, func() error {
		dnsConfig.Spec = clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{{
			Name: "external-dns-weu", Region: "weu", Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{zone.Addr}}}}}
		return nil
	})
	require.NoError(t, err)
	startOperatorWith(t, env.Config, operatorOptions{verification: fastVerification})
	for _, ns := range []string{docsTeamNamespace, docsGatewayNamespace} {
		ensureNamespace(t, ns)
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	}
	// An ingress controller name of this test's own: no other test's Gateway shares its target.
	const ingress = "appteam-docs-ingress"
	require.NoError(t, env.Client.Create(ctx, &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: docsGatewayNamespace},
		Spec:       routingv1alpha1.GatewaySpec{Controller: ingress, CredentialName: "cert-aks-ingress", TargetPostfix: "internal"},
	}))
	lb := loadBalancerService(docsGatewayNamespace, ingress, ingress)
	require.NoError(t, env.Client.Create(ctx, lb))
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.123.45.67"}}
	require.NoError(t, env.Client.Status().Update(ctx, lb))

	// The operator's roles for people as config/default names them, then the guide's grants.
	installShippedRoles(t, "editor_role.yaml", "viewer_role.yaml", "gateway_reader_role.yaml")
	admin := adminKubeconfig(t)
	for _, c := range docs.platformCommands {
		out, err := shellKubectl(t, admin, c, "")
		require.NoError(t, err, "platform command %q:\n%s", c, out)
	}
	// The aggregation controller copies the roles' rules into edit asynchronously; the bindings
	// must be in force too before the team acts.
	waitAggregatedIntoEdit(t, "service-router-editor", "service-router-viewer")
	waitAllowed(t, "create", routingv1alpha1.GroupVersion.Group, "serviceroutes", docsTeamNamespace)
	team := impersonatingKubeconfig(t, admin, docsTeamUser, docsTeamGroup)

	runAsTeam := func(t *testing.T, what, commandLine, stdin string) string {
		t.Helper()
		out, err := shellKubectl(t, team, commandLine, stdin)
		t.Logf("$ %s\n%s", what, out)
		require.NotContains(t, strings.ToLower(out), "forbidden", "%q answers Forbidden to a team with edit in %s", what, docsTeamNamespace)
		require.NoError(t, err, "%q failed:\n%s", what, out)
		return out
	}

	t.Run("manifests", func(t *testing.T) {
		for _, m := range docs.manifests {
			obj := fromYAML(t, m)
			runAsTeam(t, "kubectl apply -f - # "+obj.GetKind()+" "+obj.GetName(), "kubectl apply -f -", m)
		}
	})

	// ExternalDNS, played by hand: it reads the route's DNSEndpoint and writes the zone, so the
	// route is Published when the guide waits for it.
	route := &routingv1alpha1.ServiceRoute{}
	waitFor(t, "the guide's ServiceRoute to be Ready", func() string {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: docsTeamNamespace, Name: "api-route"}, route); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(route.Status.Conditions, routingv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("Ready: %+v", c)
		}
		return ""
	})
	require.NotEmpty(t, route.Status.Endpoints)
	markProcessed(t, docsTeamNamespace, route.Status.Endpoints[0].Name)
	target := "aks01-weu-internal.example.com"
	zone.Set(route.Status.Hostname+". 300 IN CNAME "+target+".", target+". 300 IN A 10.123.45.67")

	// One subtest per command, so that a failure lists every command that does not work.
	t.Run("USER-GUIDE.md", func(t *testing.T) {
		for _, c := range docs.commands {
			t.Run(c, func(t *testing.T) { runAsTeam(t, c, c, "") })
		}
	})
	t.Run("NOTES.txt", func(t *testing.T) {
		for _, c := range notesCommands {
			t.Run(c, func(t *testing.T) {
				out := runAsTeam(t, c, c, "")
				assert.Contains(t, out, "api-route", "the team sees its route")
			})
		}
	})

	// The documented commands work through the documented grants, not through more: the same
	// user cannot write DNSEndpoints nor Gateways, nor read beyond its namespace and the Gateways.
	t.Run("nothing more", func(t *testing.T) {
		for _, c := range []string{
			"kubectl get rgw -A",
			"kubectl get dnsendpoints -A",
			"kubectl get dnsendpoints -n " + docsGatewayNamespace,
			"kubectl get services -n " + docsGatewayNamespace,
			"kubectl get sr -n default",
		} {
			out, err := shellKubectl(t, team, c, "")
			require.Error(t, err, "%q must be refused:\n%s", c, out)
			require.Contains(t, strings.ToLower(out), "forbidden", "%q", c)
		}
		for _, c := range []string{
			"kubectl auth can-i create dnsendpoints.externaldns.k8s.io -n " + docsTeamNamespace,
			"kubectl auth can-i patch dnsendpoints.externaldns.k8s.io -n " + docsTeamNamespace,
			"kubectl auth can-i update gateways.routing.router.io -n " + docsGatewayNamespace,
			"kubectl auth can-i create gateways.routing.router.io -n " + docsTeamNamespace,
		} {
			out, _ := shellKubectl(t, team, c, "")
			require.Equal(t, "no", strings.TrimSpace(out), "%q", c)
		}
	})
}

func anyContains(list []string, s string) bool {
	for _, l := range list {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// installShippedRoles creates (or updates) the config/rbac ClusterRoles with the names
// config/default gives them (prefix service-router-), as a cluster running the operator has them.
func installShippedRoles(t *testing.T, files ...string) {
	t.Helper()
	for _, file := range files {
		roles := readManifests(t, filepath.Join(env.RepoRoot, "config", "rbac", file))
		require.Len(t, roles, 1, file)
		want := roles[0]
		want.SetName("service-router-" + want.GetName())
		existing := want.DeepCopy()
		_, err := createOrUpdate(context.Background(), existing, func() error {
			existing.Object["rules"] = want.Object["rules"]
			existing.SetLabels(want.GetLabels())
			return nil
		})
		require.NoError(t, err, file)
	}
}

// waitAggregatedIntoEdit waits until the built-in edit ClusterRole holds every rule of roles.
func waitAggregatedIntoEdit(t *testing.T, roles ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("edit to aggregate %s", strings.Join(roles, ", ")), func() string {
		edit := &rbacv1.ClusterRole{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "edit"}, edit); err != nil {
			return err.Error()
		}
		for _, name := range roles {
			role := &rbacv1.ClusterRole{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, role); err != nil {
				return err.Error()
			}
			for _, rule := range role.Rules {
				if !slices.ContainsFunc(edit.Rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, rule) }) {
					return fmt.Sprintf("edit lacks %s's rule %v", name, rule)
				}
			}
		}
		return ""
	})
}

// waitAllowed waits until the documented team (docsTeamUser in docsTeamGroup) may do verb on
// group/resource in namespace.
func waitAllowed(t *testing.T, verb, group, resource, namespace string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s to be allowed to %s %s.%s in %s", docsTeamGroup, verb, resource, group, namespace), func() string {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: docsTeamUser, Groups: []string{docsTeamGroup, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: group, Resource: resource},
		}}
		if err := env.Client.Create(context.Background(), review); err != nil {
			return err.Error()
		}
		if !review.Status.Allowed {
			return "not allowed yet: " + review.Status.Reason
		}
		return ""
	})
}
