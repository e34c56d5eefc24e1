package packaging

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// helmUpgradeValuesFlags are the flags with which `helm upgrade` keeps a release's values: a
// values file (the one the release was installed with), or the release's own values.
var helmUpgradeValuesFlags = []string{"-f", "--values", "--reuse-values", "--reset-then-reuse-values"}

// helmUpgradesWithoutValues returns how many `helm upgrade` commands a markdown text shows (in
// fenced blocks, continuation lines joined, and in inline code with arguments) and those that
// carry none of helmUpgradeValuesFlags.
func helmUpgradesWithoutValues(markdown string) (found int, bad []string) {
	var commands []string
	for _, block := range fencedBlocks(markdown) {
		commands = append(commands, strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n")...)
	}
	for _, m := range regexp.MustCompile("`(helm upgrade [^`]+)`").FindAllStringSubmatch(markdown, -1) {
		commands = append(commands, m[1])
	}
	for _, command := range commands {
		words := strings.Fields(command)
		i := slices.Index(words, "helm")
		if i < 0 || i+1 >= len(words) || words[i+1] != "upgrade" {
			continue
		}
		found++
		if !slices.ContainsFunc(words[i+2:], func(w string) bool {
			name, _, _ := strings.Cut(w, "=")
			return slices.Contains(helmUpgradeValuesFlags, name)
		}) {
			bad = append(bad, strings.Join(strings.Fields(command), " "))
		}
	}
	return found, bad
}

// TestDocs_HelmUpgradesKeepTheReleaseValues: an upgrade given --set (or any values) without -f
// or --reuse-values replaces the release's values with those alone, so a command a user copies
// would reset an install to the chart's defaults (on AKS: the chart's default image, no system
// node pool, PodDisruptionBudget, ServiceMonitor or alerts). Every `helm upgrade` the docs and the chart's README show carries a
// values file or keeps the release's values.
func TestDocs_HelmUpgradesKeepTheReleaseValues(t *testing.T) {
	docs, err := filepath.Glob(repoPath("docs", "*.md"))
	require.NoError(t, err)
	readmes, err := filepath.Glob(repoPath("charts", "*", "README.md"))
	require.NoError(t, err)
	docs = append(append(docs, readmes...), repoPath("README.md"))
	total := 0
	for _, doc := range docs {
		found, bad := helmUpgradesWithoutValues(readFile(t, doc))
		total += found
		rel, _ := filepath.Rel(repoRoot, doc)
		for _, command := range bad {
			t.Errorf("%s: `%s` resets the release's values to the chart's defaults: add -f <the values file of the install>, or --reuse-values (--reset-then-reuse-values for a new chart version)", rel, command)
		}
	}
	// The upgrades of INSTALLATION.md (two) and OPERATOR-GUIDE.md (the workload identity): a
	// command no longer recognised fails here rather than passing unchecked.
	assert.GreaterOrEqual(t, total, 3, "helm upgrade commands found in the docs")

	t.Run("control: the workload identity upgrade as it was", func(t *testing.T) {
		old := "  ```sh\n" +
			"  helm upgrade --install service-router-operator charts/service-router-operator -n service-router-system \\\n" +
			"    --set azure.workloadIdentity.clientId=\"$CLIENT_ID\"\n" +
			"  ```\n"
		found, bad := helmUpgradesWithoutValues(old)
		assert.Equal(t, 1, found)
		assert.Len(t, bad, 1)
		found, bad = helmUpgradesWithoutValues(strings.Replace(old, "--set", "--reuse-values --set", 1))
		assert.Equal(t, 1, found)
		assert.Empty(t, bad)
	})
}

// TestDocs_HomelabInstallsTheImageItPushes: the homelab walkthrough (docs/INSTALLATION.md#homelab)
// installs the chart from the clone, whose default image is not published; it builds and pushes
// the image first and installs the chart with that image. The walkthrough's `make` command pushes
// (as `make -n` shows) the layout's index to IMG, over plain HTTP as it says; its `helm install`
// renders a Deployment running exactly IMG (the repository it sets, the chart's default tag); and
// the registry host is one placeholder written only in those two commands, so that a reader (or a
// test) replaces it in one place.
func TestDocs_HomelabInstallsTheImageItPushes(t *testing.T) {
	section := docSection(t, readFile(t, repoPath("docs", "INSTALLATION.md")), "### Homelab")

	// The make command, and the variables its block exports for it (make reads them as
	// command-line variables here: the Makefile sets IMG and REGISTRY_PLAIN_HTTP with ?=).
	var makeArgs, exported []string
	for _, block := range fencedBlocks(section) {
		var blockExports []string
		for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
			words := strings.Fields(line)
			switch {
			case len(words) > 1 && words[0] == "export":
				blockExports = append(blockExports, words[1:]...)
			case len(words) > 1 && words[0] == "make" && slices.Contains(words, "image-push"):
				require.Nil(t, makeArgs, "one make image-push command in the walkthrough")
				makeArgs, exported = words[1:], blockExports
			}
		}
	}
	require.NotNil(t, makeArgs, "the walkthrough pushes no image (make ... image-push with IMG=...)")
	require.Equal(t, []string{"image", "image-push"}, makeArgs[:2], "the walkthrough builds the image before pushing it")
	makeArgs = append(slices.Clone(makeArgs), exported...)

	vars := map[string]string{}
	for _, a := range makeArgs {
		if name, value, ok := strings.Cut(a, "="); ok {
			vars[name] = value
		}
	}
	img := vars["IMG"]
	_, tag, ok := strings.Cut(img[strings.LastIndex(img, "/")+1:], ":")
	require.True(t, ok && tag != "", "IMG=%q names a tag", img)
	host, _, _ := strings.Cut(img, "/")
	require.Contains(t, host, ".", "IMG=%q starts with a registry host", img)
	assert.Equal(t, "v"+chartAppVersion(t), tag, "the tag pushed is the chart's default tag (v<appVersion>)")

	// The push: the index of `make image` to IMG, over plain HTTP exactly when the walkthrough says.
	makeBinary, err := exec.LookPath("make")
	require.NoError(t, err, "GNU make is needed to check the Makefile")
	bin := t.TempDir()
	out := makeDryRun(t, makeBinary, append(slices.Clone(makeArgs), "BIN="+bin), "IMG", "REGISTRY_PLAIN_HTTP", "VERSION")
	var push []string
	for _, line := range strings.Split(out, "\n") {
		if words := strings.Fields(line); len(words) > 1 && words[0] == bin+"/release-tool" && words[1] == "push" {
			push = words[2:]
		}
	}
	require.Contains(t, push, "--to="+img, "make %s:\n%s", strings.Join(makeArgs, " "), out)
	assert.Equal(t, vars["REGISTRY_PLAIN_HTTP"] == "true", slices.Contains(push, "--insecure"), "plain HTTP: %q", push)
	assert.Empty(t, unbuiltBinaries(out, bin))

	// The install, run as written (helm recording its arguments): the chart from the clone, with
	// the cluster's values file the walkthrough makes, runs IMG.
	calls, script := recordDocSequence(t, homelabValuesSequence[:1])
	require.Len(t, calls, 1, "one helm install in the walkthrough:\n%s", script)
	deployment := findObject(t, renderRecordedInstall(t, calls[0]), "Deployment", releaseName)
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	assert.Equal(t, img, containers[0].(map[string]any)["image"], "the Deployment runs the image the walkthrough pushed")

	assert.Equal(t, 2, strings.Count(section, host),
		"the registry host %s appears once in the make command and once in the cluster's values file, nowhere else in the section", host)
}

// docSection returns the part of a markdown text under the line heading (e.g. "### Homelab"), up
// to the next heading of the same or a higher level; "# " lines of code blocks are no headings.
func docSection(t *testing.T, markdown, heading string) string {
	t.Helper()
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	var section []string
	in, fenced := false, false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		} else if !fenced {
			if l := len(line) - len(strings.TrimLeft(line, "#")); l > 0 && strings.HasPrefix(line[l:], " ") {
				if in && l <= level {
					break
				}
				if line == heading {
					in = true
					continue
				}
			}
		}
		if in {
			section = append(section, line)
		}
	}
	require.NotEmpty(t, section, "no section %q", heading)
	return strings.Join(section, "\n")
}
