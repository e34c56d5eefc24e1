package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSpecManifests_ApplyUnchanged submits every router.io manifest of the architecture document,
// exactly as written there (test/testdata/spec-manifests.yaml is extracted verbatim by
// hack/specmanifests), and expects the API server to accept each one.
func TestSpecManifests_ApplyUnchanged(t *testing.T) {
	manifests := readManifests(t, filepath.Join(env.RepoRoot, "test", "testdata", "spec-manifests.yaml"))
	require.GreaterOrEqual(t, len(manifests), 25, "the architecture document has at least 25 router.io manifests")

	for _, obj := range manifests {
		if ns := obj.GetNamespace(); ns != "" {
			ensureNamespace(t, ns)
		}
	}
	kinds := map[string]int{}
	for i, obj := range manifests {
		kinds[obj.GetKind()]++
		err := applyDryRun(obj)
		require.NoError(t, err, "manifest #%d (%s %s/%s) from the architecture document was rejected", i+1, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	for _, kind := range []string{"ClusterIdentity", "DNSConfiguration", "Gateway", "DNSPolicy", "ServiceRoute"} {
		require.Positive(t, kinds[kind], "no %s manifest was found in the document", kind)
	}
}

// TestSamples_Apply creates every sample in config/samples for real, in dependency order.
func TestSamples_Apply(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, "config", "samples", "*_v1alpha1_*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		for _, obj := range readManifests(t, file) {
			if ns := obj.GetNamespace(); ns != "" {
				ensureNamespace(t, ns)
			}
			require.NoError(t, applyDryRun(obj), "sample %s was rejected", filepath.Base(file))
		}
	}
}

// applyDryRun submits obj as a whole, with dry-run: schema validation, CEL rules and defaulting
// run exactly as for a real create or replace, nothing is stored, and the singletons of one
// example (which may exist already, created by other tests) do not collide with those of the
// next. An existing object is replaced rather than merged (as server-side apply would), so the
// rules see exactly the manifest's fields.
func applyDryRun(obj *unstructured.Unstructured) error {
	ctx := context.Background()
	err := env.Client.Create(ctx, obj.DeepCopy(), client.DryRunAll)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(obj.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return err
	}
	replacement := obj.DeepCopy()
	replacement.SetResourceVersion(existing.GetResourceVersion())
	return env.Client.Update(ctx, replacement, client.DryRunAll)
}

func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err, "decoding %s", path)
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
