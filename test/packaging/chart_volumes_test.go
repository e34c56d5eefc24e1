package packaging

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The TLS roots of docs/OPERATOR-GUIDE.md, run as written after the AKS install (its ConfigMap
// command, the chart value appended to the cluster's values file, the upgrade): the ConfigMap is
// mounted read-only next to the azure.json Secret, SSL_CERT_FILE names the file its key roots.pem
// becomes, and the workload identity stays. (The node suite's TestAKS runs the same commands
// against the Azure stand-in.)
func TestChart_TLSRootsMountTheGuidesConfigMap(t *testing.T) {
	calls, script := recordDocSequence(t, aksValuesSequence[:2])
	require.Len(t, calls, 2, script)
	d := deploymentOf(t, renderRecordedInstall(t, append(calls[1], "--set", "azure.configSecret=operator-azure")))
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Volumes, 2, "the azure.json Secret and the roots")
	assert.Equal(t, "azure-config", pod.Volumes[0].Name)
	roots := pod.Volumes[1]
	require.NotNil(t, roots.ConfigMap, "the roots' volume is the guide's ConfigMap: %+v", roots)
	assert.Equal(t, "tls-roots", roots.ConfigMap.Name)
	assert.Contains(t, script, "create configmap "+roots.ConfigMap.Name+" --from-file=roots.pem=", "the ConfigMap the guide creates")

	c := pod.Containers[0]
	assert.Equal(t, []corev1.VolumeMount{
		{Name: "azure-config", MountPath: "/etc/azure", ReadOnly: true},
		{Name: roots.Name, MountPath: "/etc/ssl/tls-roots", ReadOnly: true},
	}, c.VolumeMounts)
	assert.Contains(t, c.Env, corev1.EnvVar{Name: "SSL_CERT_FILE", Value: "/etc/ssl/tls-roots/roots.pem"},
		"SSL_CERT_FILE names the file the ConfigMap's key roots.pem becomes")
	assert.Equal(t, "true", d.Spec.Template.Labels["azure.workload.identity/use"], "the AKS values' workload identity stays")

	_, err := helm(t, "template", releaseName, chartPath, "--kube-version", renderKubeVersion,
		"--set", "extraVolumes[0].name=roots", "--set", "extraVolumeMounts[0].name=roots")
	require.Error(t, err, "a mount without mountPath must be rejected")
	assert.Contains(t, err.Error(), "mountPath")
}

// The TSIG key of docs/OPERATOR-GUIDE.md's regional failover, run as written after the homelab
// install: the Secret its kubectl command creates, named by the chart value its heredoc appends,
// puts the key named after the zone at the path the DNSConfiguration's tsig.secretFile reads.
func TestChart_TSIGSecretMountedWhereTheFailoverReadsIt(t *testing.T) {
	guide, err := os.ReadFile(repoPath("docs", "OPERATOR-GUIDE.md"))
	require.NoError(t, err)
	config, err := framework.BlockWith(string(guide), "secretFile:")
	require.NoError(t, err, "the guide's failover DNSConfiguration")
	secretFile := fieldValue(t, config, "secretFile:")

	calls, script := recordDocSequence(t, homelabValuesSequence[:2])
	require.Len(t, calls, 2, script)
	pod := deploymentOf(t, renderRecordedInstall(t, calls[1])).Spec.Template.Spec
	require.Len(t, pod.Volumes, 1)
	secret := pod.Volumes[0].Secret
	require.NotNil(t, secret, "the key's volume is a Secret: %+v", pod.Volumes[0])
	assert.Contains(t, script, "create secret generic "+secret.SecretName+" --from-literal="+filepath.Base(secretFile)+"=",
		"the Secret the guide creates holds a key named after the file secretFile reads")
	require.Len(t, pod.Containers[0].VolumeMounts, 1)
	mount := pod.Containers[0].VolumeMounts[0]
	assert.Equal(t, pod.Volumes[0].Name, mount.Name)
	assert.True(t, mount.ReadOnly)
	assert.Equal(t, mount.MountPath, filepath.Dir(secretFile), "secretFile is a file of the mounted Secret")
}

// fieldValue returns the value of the one line of block that starts with key, its comment aside.
func fieldValue(t *testing.T, block, key string) string {
	t.Helper()
	var values []string
	for line := range strings.SplitSeq(block, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			v, _, _ = strings.Cut(v, "#")
			values = append(values, strings.TrimSpace(v))
		}
	}
	require.Len(t, values, 1, "one %s line", key)
	return values[0]
}
