package packaging

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// docCommand returns the one line of a fenced shell block of docs/<doc> that contains marker.
func docCommand(t *testing.T, doc, marker string) string {
	t.Helper()
	var found []string
	for _, block := range fencedBlocks(readFile(t, repoPath("docs", doc))) {
		for _, line := range strings.Split(block, "\n") {
			if strings.Contains(line, marker) {
				found = append(found, strings.TrimSpace(line))
			}
		}
	}
	require.Len(t, found, 1, "docs/%s has one command with %q", doc, marker)
	return found[0]
}

// runDocCommand runs a documented shell command with bin/ (kubectl) first on PATH against the
// test control plane, and returns its standard output.
func runDocCommand(t *testing.T, command string) string {
	t.Helper()
	kubectl := repoPath("bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("%s not found: run `make test` (it builds the control plane and kubectl into bin/)", kubectl)
	}
	kubeconfig, err := controlPlane(t).AdminKubeconfig()
	require.NoError(t, err)
	cmd := exec.Command("bash", "-o", "pipefail", "-c", command)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(kubectl)+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig,
		"KUBECACHEDIR="+filepath.Join(t.TempDir(), "kube-cache"))
	out, err := cmd.Output()
	var stderr string
	if exitErr, ok := err.(*exec.ExitError); ok {
		stderr = string(exitErr.Stderr)
	}
	require.NoError(t, err, "%s\n%s%s", command, out, stderr)
	return string(out)
}

// TestDocs_OwnershipConflictDiagnosisListsRoutesAndGateways runs the diagnosis command of the
// ServiceRouterOwnershipConflict runbook (docs/OPERATOR-GUIDE.md) with kubectl against a real API
// server holding a ServiceRoute and a Gateway blocked by an ownership conflict and a route that is
// not: it lists both blocked objects, and only them.
func TestDocs_OwnershipConflictDiagnosisListsRoutesAndGateways(t *testing.T) {
	env := controlPlane(t)
	ctx := context.Background()
	ns := "runbook-" + rand.String(5)
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	ready := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: "set by the test", LastTransitionTime: metav1.Now()}}
	}
	route := func(name string) *routingv1alpha1.ServiceRoute {
		return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: name, GatewayName: "gw", GatewayNamespace: ns, Environment: "dev", Application: "runbook"}}
	}
	blockedRoute, fineRoute := route("blocked"), route("fine")
	gateway := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "blocked-gw", Namespace: ns},
		Spec: routingv1alpha1.GatewaySpec{Controller: "runbook-ingress", CredentialName: "cert", TargetPostfix: "internal"}}
	for _, obj := range []client.Object{blockedRoute, fineRoute, gateway} {
		require.NoError(t, env.Client.Create(ctx, obj))
		deleteAtEnd(t, env.Client, obj)
	}
	// The statuses the operator would write (no operator runs in this test).
	blockedRoute.Status.Conditions = ready(metav1.ConditionFalse, "OwnershipConflict")
	fineRoute.Status.Conditions = ready(metav1.ConditionTrue, "Published")
	gateway.Status.Conditions = ready(metav1.ConditionFalse, "OwnershipConflict")
	for _, obj := range []client.Object{blockedRoute, fineRoute, gateway} {
		require.NoError(t, env.Client.Status().Update(ctx, obj))
	}

	out := runDocCommand(t, docCommand(t, "OPERATOR-GUIDE.md", "grep -w OwnershipConflict"))
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 3 && fields[1] == ns {
			listed = append(listed, fields[0]+" "+fields[2])
		}
	}
	assert.ElementsMatch(t, []string{"ServiceRoute blocked", "Gateway blocked-gw"}, listed, "the command's output:\n%s", out)
}

// TestDocs_ExampleFilesShownAsTheyAre: a doc that shows an example file (a fenced block starting
// with the file's first line, its header comment) shows all of it, so that a reader who copies
// the block applies what `kubectl apply -f docs/examples/...` would. The homelab walkthrough's
// end-to-end test checks the same, but only after the whole suite has built and run; a comment
// added to one copy and not the other once failed CI there.
func TestDocs_ExampleFilesShownAsTheyAre(t *testing.T) {
	docs, err := filepath.Glob(repoPath("docs", "*.md"))
	require.NoError(t, err)
	docs = append(docs, repoPath("README.md"))
	shown := 0
	err = filepath.WalkDir(repoPath("docs", "examples"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		file := strings.TrimRight(readFile(t, path), "\n")
		header, _, _ := strings.Cut(file, "\n")
		for _, doc := range docs {
			for _, block := range fencedBlocks(readFile(t, doc)) {
				if first, _, _ := strings.Cut(block, "\n"); first != header {
					continue
				}
				shown++
				rel, _ := filepath.Rel(repoRoot, path)
				assert.Equal(t, file, strings.TrimRight(block, "\n"), "%s shows %s, but not as it is: copy the file into the block", filepath.Base(doc), rel)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Positive(t, shown, "no doc shows an example file: the homelab walkthrough shows docs/examples/homelab/*.yaml")
}
