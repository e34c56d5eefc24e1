//go:build node

package node

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

const quickstartHeading = "### Five minutes on k3s or kind"

// TestQuickstart_ImportedImageAnswersInFiveMinutes runs docs/INSTALLATION.md's "Five minutes on
// k3s or kind" as written, block by block, on a two-node cluster whose nodes run Debian's
// containerd (kind's and k3s' nodes run containerd too): the image archive made with its make
// command, imported into the nodes' containerd with its kind and k3s commands, the chart
// installed with the imported image and never pulled, and `make demo-on-cluster` answering the
// name the section shows. Replaced, and nothing else:
//   - `kind load image-archive F`: what kind runs on its node, `ctr --namespace=k8s.io images
//     import --all-platforms --digests -` with F on its input, on the world's second node;
//   - `sudo k3s ctr ...`: k3s' bundled ctr (namespace k8s.io by default) against the world's
//     first node; sudo runs its command (the suite runs as root);
//   - the CRDs' URLs: the same files from the Go modules of the versions the URLs name (a
//     version that is not go.mod's fails the test);
//   - `make demo-on-cluster`: DEMO_FLAGS=--check (report, then clean up, as CI runs make demo)
//     and a state directory of the test's own.
//
// Both imports are proven: the pod runs on one node, which is then cordoned, and its replacement
// on the other node becomes Ready with the image never pulled (the registry has no such image).
func TestQuickstart_ImportedImageAnswersInFiveMinutes(t *testing.T) {
	ctx := t.Context()
	section := readDocSection(t, homelabDoc, quickstartHeading)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	w := startWorld(t, 2)
	cl := w.Cluster()
	diagnose := operatorDiagnostics(ctx, w)
	if len(w.Nodes) != 2 {
		t.Fatalf("%d nodes, want 2", len(w.Nodes))
	}
	k3sNode, kindNode := w.Nodes[0], w.Nodes[1]
	standIns := "sudo() { \"$@\"; }\n" +
		"k3s() { [ \"$1\" = ctr ] || return 1; shift; ctr --address " + k3sNode.Socket + " --namespace=k8s.io \"$@\"; }\n" +
		"kind() { [ \"$1 $2\" = \"load image-archive\" ] || return 1; ctr --address " + kindNode.Socket +
		" --namespace=k8s.io images import --all-platforms --digests - < \"$3\"; }\n"
	run := func(step, script string) string {
		t.Helper()
		started := time.Now()
		out, err := cl.RunScript(ctx, script)
		if err != nil {
			t.Fatalf("%s: %v\n%s", step, err, diagnose())
		}
		t.Logf("%s, %s:\n%s", step, time.Since(started).Round(100*time.Millisecond), lastLines(out, 4))
		return out
	}

	// Step 1: the archive (in the tree: make), then each node's import.
	started := time.Now()
	unlock, err := framework.LockTree(root)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cl.RunScript(ctx, section.block("make image-archive"))
	unlock()
	if err != nil {
		t.Fatalf("make image-archive: %v\n%s", err, out)
	}
	t.Logf("make image-archive, %s:\n%s", time.Since(started).Round(100*time.Millisecond), lastLines(out, 2))
	archive := regexp.MustCompile(`kind load image-archive (\S+)`).FindStringSubmatch(section.block("kind load image-archive"))
	if archive == nil {
		t.Fatal("the kind command names no archive")
	}
	imported := time.Now()
	// The archive is the tree's: the import scripts run in the cluster's checkout, which links it.
	run("kind's import (on "+kindNode.Name+")", standIns+section.block("kind load image-archive"))
	run("k3s' import (on "+k3sNode.Name+")", standIns+section.block("k3s ctr images import"))

	// Step 2: the CRDs from the modules, the values file, the chart, the rollout.
	install := section.block("helm install")
	crds, err := testenv.LocateCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range regexp.MustCompile(`https://raw\.githubusercontent\.com/[^/\s]+/[^/\s]+/(v[^/\s]+)/(\S+)`).FindAllStringSubmatch(install, -1) {
		local := ""
		for _, f := range []string{crds.ExternalDNS, crds.Istio} {
			if strings.HasSuffix(f, "@"+url[1]+"/"+url[2]) {
				local = f
			}
		}
		if local == "" {
			t.Fatalf("%s: %s is not a CRD file of the modules go.mod selects (%s, %s)", quickstartHeading, url[0], crds.ExternalDNS, crds.Istio)
		}
		install = strings.Replace(install, url[0], local, 1)
	}
	run("the CRDs and the chart", install)
	pods, err := w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
	if err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	image := regexp.MustCompile("archive\\s+named\\s+`([^`]+)`").FindStringSubmatch(section.text)
	if image == nil {
		t.Fatalf("%s: the section does not name the archive's image (archive named `...`)", quickstartHeading)
	}
	first := checkImportedPod(t, pods, image[1])
	t.Logf("the operator Ready on %s %s after the imports began", first.Spec.NodeName, time.Since(imported).Round(100*time.Millisecond))

	// Step 3: the name answers.
	demo := strings.TrimSpace(section.block("make demo-on-cluster"))
	if demo != "make demo-on-cluster" {
		t.Fatalf("%s: the demo block is %q", quickstartHeading, demo)
	}
	out = run("make demo-on-cluster", demo+" DEMO_FLAGS=--check DEMO_STATE_DIR="+filepath.Join(t.TempDir(), "demo"))
	answer := regexp.MustCompile("`([a-z0-9.-]+)` → CNAME\\s+`([a-z0-9.-]+)` → A `([0-9.]+)`").FindStringSubmatch(strings.ReplaceAll(section.text, "\n", " "))
	if answer == nil {
		t.Fatalf("%s: no answer shown (`name` → CNAME `target` → A `address`)", quickstartHeading)
	}
	for _, want := range []string{
		`(?m)^\s*` + regexp.QuoteMeta(answer[1]) + `\.?\s+IN\s+CNAME\s+` + regexp.QuoteMeta(answer[2]) + `\.?\s*$`,
		`(?m)^\s*` + regexp.QuoteMeta(answer[2]) + `\.?\s+IN\s+A\s+` + regexp.QuoteMeta(answer[3]) + `\s*$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("make demo-on-cluster does not print the answer the section shows (%s):\n%s", want, out)
		}
	}
	t.Logf("from make image-archive to the name answering: %s", time.Since(started).Round(time.Second))

	// The other node's import: the pod's node cordoned, its replacement Ready there.
	var node corev1.Node
	if err := w.Client.Get(ctx, client.ObjectKey{Name: first.Spec.NodeName}, &node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Unschedulable = true
	if err := w.Client.Patch(ctx, &node, patch); err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Delete(ctx, &first); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, podTimeout, time.Second, "the operator's pod Ready on the other node", func(ctx context.Context) (bool, string, error) {
		pods, err = w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
		if err != nil {
			return false, "", err
		}
		return len(pods) == 1 && pods[0].Spec.NodeName != first.Spec.NodeName, describePods(pods), nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	t.Logf("the operator Ready on %s too, from the other import", checkImportedPod(t, pods, image[1]).Spec.NodeName)
}

func describePods(pods []corev1.Pod) string {
	var s []string
	for _, p := range pods {
		s = append(s, p.Name+" on "+p.Spec.NodeName)
	}
	return strings.Join(s, ", ")
}

// checkImportedPod checks the one operator pod runs the imported image, never pulled, and returns it.
func checkImportedPod(t *testing.T, pods []corev1.Pod, image string) corev1.Pod {
	t.Helper()
	if len(pods) != 1 {
		t.Fatalf("%d operator pods, want 1", len(pods))
	}
	c := pods[0].Spec.Containers[0]
	if c.Image != image || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("pod %s runs %s (pull policy %s), want the imported %s, never pulled", pods[0].Name, c.Image, c.ImagePullPolicy, image)
	}
	for _, cs := range pods[0].Status.ContainerStatuses {
		if !cs.Ready || cs.RestartCount > 0 {
			t.Errorf("pod %s: container %s ready %v, %d restarts", pods[0].Name, cs.Name, cs.Ready, cs.RestartCount)
		}
	}
	return pods[0]
}
