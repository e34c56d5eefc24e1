package packaging

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// docStep is one documented command block, found by a line it holds, that a cluster's operator
// runs in order with the blocks before it (one shell: CLUSTER and the values file carry over).
type docStep struct {
	doc, section, line string // section: a heading line, or "" for the whole document
}

// The documented sequences of a cluster's helm installs and upgrades: each path's install, then
// every later upgrade the docs give (failover's TSIG keys apply to either path's RFC 2136 zones).
var (
	aksValuesSequence = []docStep{
		{"INSTALLATION.md", "### AKS", `sed -e "s/<cluster>/$CLUSTER/" -e "s/<client-id>/$CLIENT_ID/" docs/examples/aks-values.yaml > values-$CLUSTER.yaml`},
		{"OPERATOR-GUIDE.md", "", "  configMap: tls-roots"},
		{"OPERATOR-GUIDE.md", "", "  secret: zone-tsig"},
		{"INSTALLATION.md", "### Upgrading", "-n service-router-system -f values-$CLUSTER.yaml"},
	}
	homelabValuesSequence = []docStep{
		{"INSTALLATION.md", "### Homelab", "cp docs/examples/homelab-values.yaml values-$CLUSTER.yaml"},
		{"OPERATOR-GUIDE.md", "", "  secret: zone-tsig"},
		{"INSTALLATION.md", "### Upgrading", "-n service-router-system -f values-$CLUSTER.yaml"},
	}
)

// helmRecorder replaces helm, kubectl and az in a documented script: each helm install or upgrade
// is recorded (calls/<n>.args, its values files copied as they were at that moment), the rest does
// nothing (az prints an ID).
const helmRecorder = `n=0
helm() {
  case "$1" in install|upgrade) ;; *) return 0 ;; esac
  n=$((n+1)); local args=() prev=""
  for a in "$@"; do
    local arg="$a"
    if [ "$prev" = -f ] || [ "$prev" = --values ]; then arg="$CALLS/$n.$(basename "$a")"; cp "$a" "$arg"; fi
    args+=("$arg"); prev="$a"
  done
  printf '%s\037' "${args[@]}" > "$CALLS/$n.args"
}
kubectl() { :; }
az() { echo 33333333-3333-3333-3333-333333333333; }
`

// identityClientID is the client ID OPERATOR-GUIDE's identity commands leave in CLIENT_ID, in the
// shell where the AKS install block runs next (a well-formed client ID of no identity).
const identityClientID = "22222222-2222-2222-2222-222222222222"

// recordDocSequence runs the blocks of steps in one shell as written, in a directory of its own
// where docs/ and charts/ are the repository's, CLIENT_ID set as OPERATOR-GUIDE's identity
// commands leave it, and returns the arguments of each helm install or upgrade in order (values
// files copied as they were then) and the script run.
func recordDocSequence(t *testing.T, steps []docStep) ([][]string, string) {
	t.Helper()
	calls := t.TempDir()
	script, out, err := runDocSequence(t, steps, "CALLS="+calls, "CLIENT_ID="+identityClientID)
	require.NoError(t, err, "%s\n%s", script, out)

	var recorded [][]string
	for n := 1; ; n++ {
		args, err := os.ReadFile(filepath.Join(calls, strconv.Itoa(n)+".args"))
		if os.IsNotExist(err) {
			return recorded, script
		}
		require.NoError(t, err)
		recorded = append(recorded, strings.Split(strings.TrimSuffix(string(args), "\037"), "\037"))
	}
}

// runDocSequence runs the blocks of steps in one shell as written, in a directory of its own where
// docs/ and charts/ are the repository's, with env added to the test's environment (CALLS, where
// the helm recorder writes, among it).
func runDocSequence(t *testing.T, steps []docStep, env ...string) (script string, out []byte, err error) {
	t.Helper()
	dir := t.TempDir()
	for _, entry := range []string{"docs", "charts"} {
		require.NoError(t, os.Symlink(repoPath(entry), filepath.Join(dir, entry)))
	}
	script = helmRecorder
	for _, step := range steps {
		text := readFile(t, repoPath("docs", step.doc))
		if step.section != "" {
			text = docSection(t, text, step.section)
		}
		block, err := framework.BlockWithLine(text, strings.TrimSpace(step.line))
		require.NoError(t, err, "docs/%s %s", step.doc, step.section)
		script += "\n# docs/" + step.doc + "\n" + block
	}
	// Without -u: a block may use what an earlier section sets (TSIG_SECRET_WEU).
	cmd := exec.Command("bash", "-eo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err = cmd.CombinedOutput()
	return script, out, err
}

// TestDocs_AKSInstallStopsWithoutTheIdentitysClientID: the AKS install block pasted in a shell
// where CLIENT_ID is not set stops before it writes a values file or installs anything, and says
// which variable to set; it never installs with a placeholder or an example identity.
func TestDocs_AKSInstallStopsWithoutTheIdentitysClientID(t *testing.T) {
	calls := t.TempDir()
	t.Setenv("CLIENT_ID", "")
	script, out, err := runDocSequence(t, aksValuesSequence[:1], "CALLS="+calls)
	require.Error(t, err, "the block ran without CLIENT_ID:\n%s\n%s", script, out)
	assert.Contains(t, string(out), "CLIENT_ID: set CLIENT_ID to the client ID of the operator identity", "the message names the variable")
	installs, _ := filepath.Glob(filepath.Join(calls, "*.args"))
	assert.Empty(t, installs, "nothing installed")
}

// documentedAKSValues returns the AKS cluster values file as docs/INSTALLATION.md#aks makes it from
// the template docs/examples/aks-values.yaml (which the chart refuses as it is).
func documentedAKSValues(t *testing.T) string {
	t.Helper()
	calls, script := recordDocSequence(t, aksValuesSequence[:1])
	require.Len(t, calls, 1, script)
	i := slices.Index(calls[0], "-f")
	require.True(t, i >= 0 && i+1 < len(calls[0]), "the AKS install gives its values file: %q", calls[0])
	return calls[0][i+1]
}

// renderRecordedInstall renders the chart as a recorded `helm install|upgrade [--install] NAME
// CHART flags...` would install it.
func renderRecordedInstall(t *testing.T, args []string) []*unstructured.Unstructured {
	t.Helper()
	args = slices.DeleteFunc(slices.Clone(args[1:]), func(a string) bool {
		return a == "--install" || a == "--take-ownership" || a == "--create-namespace"
	})
	require.GreaterOrEqual(t, len(args), 2, "helm %q", args)
	require.Equal(t, []string{releaseName, chartPath}, args[:2], "the docs install the chart of the clone as %s", releaseName)
	var extra []string
	for i := 2; i < len(args); i++ {
		switch args[i] {
		case "-f", "--values", "--set":
			require.Less(t, i+1, len(args))
			extra = append(extra, args[i], args[i+1])
			i++
		case "-n", "--namespace":
			require.Less(t, i+1, len(args))
			require.Equal(t, releaseNamespace, args[i+1])
			i++
		default:
			t.Fatalf("helm %q: argument %q not understood by the test", args, args[i])
		}
	}
	return renderChart(t, extra...)
}

// lostSettings lists what the render before holds and the render after does not: an object gone,
// or a field of it whose value is gone or changed (lists compared as sets of elements, each
// element of before contained in one of after). Additions are no loss.
func lostSettings(before, after []*unstructured.Unstructured) []string {
	key := func(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }
	byKey := map[string]*unstructured.Unstructured{}
	for _, o := range after {
		byKey[key(o)] = o
	}
	var lost []string
	for _, o := range before {
		a, ok := byKey[key(o)]
		if !ok {
			lost = append(lost, key(o)+": gone")
			continue
		}
		lost = append(lost, notContained(key(o), o.Object, a.Object)...)
	}
	return lost
}

func notContained(path string, before, after any) []string {
	switch b := before.(type) {
	case map[string]any:
		a, ok := after.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v became %v", path, before, after)}
		}
		var lost []string
		for k, v := range b {
			av, ok := a[k]
			if !ok {
				lost = append(lost, fmt.Sprintf("%s.%s: %v gone", path, k, v))
				continue
			}
			lost = append(lost, notContained(path+"."+k, v, av)...)
		}
		return lost
	case []any:
		a, ok := after.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v became %v", path, before, after)}
		}
		var lost []string
		for i, v := range b {
			if !slices.ContainsFunc(a, func(av any) bool { return len(notContained("", v, av)) == 0 }) {
				lost = append(lost, fmt.Sprintf("%s[%d]: %v gone", path, i, v))
			}
		}
		return lost
	default:
		if !reflect.DeepEqual(before, after) {
			return []string{fmt.Sprintf("%s: %v became %v", path, before, after)}
		}
		return nil
	}
}

// TestDocs_AKSValuesSurviveEveryDocumentedUpgrade runs, as written in one shell, the AKS install
// of docs/INSTALLATION.md (the cluster's values file made from aks-values.yaml, helm install),
// OPERATOR-GUIDE's TLS roots and failover TSIG upgrades, and INSTALLATION's chart upgrade, with
// helm recording each install and upgrade; the chart rendered after each step keeps every
// setting of the step before (rendered manifests compared), and the last one runs with the
// cluster's identity, its name on the metrics, the roots and the TSIG keys. Then the same for
// the homelab path. A control shows what the check catches: the docs' earlier way, two values
// files that each set extraVolumes, loses the first file's mount.
func TestDocs_AKSValuesSurviveEveryDocumentedUpgrade(t *testing.T) {
	for _, path := range []struct {
		name  string
		steps []docStep
	}{{"aks", aksValuesSequence}, {"homelab", homelabValuesSequence}} {
		t.Run(path.name, func(t *testing.T) {
			calls, script := recordDocSequence(t, path.steps)
			require.Len(t, calls, len(path.steps), "one helm install or upgrade per step:\n%s", script)
			var renders [][]*unstructured.Unstructured
			for _, args := range calls {
				renders = append(renders, renderRecordedInstall(t, args))
			}
			for i := 1; i < len(renders); i++ {
				assert.Empty(t, lostSettings(renders[i-1], renders[i]), "step %d (docs/%s) loses settings of the step before",
					i+1, path.steps[i].doc)
			}
			last := renders[len(renders)-1]
			pod := deploymentOf(t, last).Spec.Template.Spec
			mounts := map[string]string{}
			for _, m := range pod.Containers[0].VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			assert.Equal(t, "/etc/service-router/tsig", mounts["zone-tsig"], "the TSIG keys are mounted where the DNSConfiguration's secretFile names them")
			if path.name == "homelab" {
				assert.Equal(t, "registry.home.arpa:5000/service-router-operator:v"+chartAppVersion(t), pod.Containers[0].Image)
				return
			}
			assert.Equal(t, "/etc/ssl/tls-roots", mounts["tls-roots"])
			env := map[string]string{}
			for _, e := range pod.Containers[0].Env {
				env[e.Name] = e.Value
			}
			assert.Equal(t, "/etc/ssl/tls-roots/roots.pem", env["SSL_CERT_FILE"])
			sa := findObject(t, last, "ServiceAccount", releaseName)
			assert.Equal(t, identityClientID, sa.GetAnnotations()["azure.workload.identity/client-id"],
				"the identity OPERATOR-GUIDE's commands leave in CLIENT_ID")
			monitor := findObject(t, last, "ServiceMonitor", releaseName)
			endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
			require.NotEmpty(t, endpoints)
			relabelings, _, _ := unstructured.NestedSlice(endpoints[0].(map[string]any), "relabelings")
			assert.Contains(t, relabelings, map[string]any{"targetLabel": "cluster", "replacement": "aks01"},
				"the series carry this cluster's name")
		})
	}

	t.Run("control: two values files that set one list", func(t *testing.T) {
		dir := t.TempDir()
		write := func(name, content string) string {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			return p
		}
		roots := write("tls-roots-values.yaml", "extraVolumes:\n  - name: tls-roots\n    configMap: {name: tls-roots}\n"+
			"extraVolumeMounts:\n  - {name: tls-roots, mountPath: /etc/ssl/tls-roots, readOnly: true}\n")
		tsig := write("tsig-values.yaml", "extraVolumes:\n  - name: zone-tsig\n    secret: {secretName: zone-tsig}\n"+
			"extraVolumeMounts:\n  - {name: zone-tsig, mountPath: /etc/service-router/tsig, readOnly: true}\n")
		home := repoPath("docs", "examples", "homelab-values.yaml")
		lost := lostSettings(renderChart(t, "-f", home, "-f", roots), renderChart(t, "-f", home, "-f", roots, "-f", tsig))
		assert.NotEmpty(t, lost, "a later file's extraVolumes replaces the earlier's: the check must see the roots' mount go")
	})
}
