package framework

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// The world installs OLM from the manifests OLM's release makes of its module (the chart rendered
// with the upstream values, concatenated as the quickstart), with only the image references its
// release sets being the world's: the OLM image in olm-operator, catalog-operator (and its
// --util-image) and packageserver, the opm image in --opmImage; the community catalog, an image
// from outside, left out; every CRD the olm operator lists, OLMConfig included.
func TestRenderOLMRelease_TheReleasesManifestsWithTheWorldsImages(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := HelmBinary(); err != nil {
		t.Skipf("no helm: %v", err)
	}
	w := &NodeWorld{root: root, Dir: t.TempDir()}
	dir, err := w.olmModuleDir(context.Background())
	if err != nil {
		t.Skipf("the OLM module is not available: %v", err)
	}
	const olmImage, opmImage = "10.200.0.2:5000/operator-framework/olm@sha256:0123", "10.200.0.2:5000/operator-framework/opm@sha256:4567"
	crds, manifests, err := w.renderOLMRelease(context.Background(), dir, olmImage, opmImage)
	if err != nil {
		t.Fatal(err)
	}
	for _, plural := range []string{"catalogsources", "clusterserviceversions", "installplans", "olmconfigs", "operatorconditions", "operatorgroups", "operators", "subscriptions"} {
		if !strings.Contains(crds, "name: "+plural+".operators.coreos.com") {
			t.Errorf("crds.yaml lacks %s", plural)
		}
	}
	// Upstream's configmap-operator-registry serves CatalogSources of sourceType configmap only
	// (deprecated; no pod of a grpc CatalogSource runs it): it stays as the release sets it.
	if left := regexp.MustCompile(`.*quay\.io.*`).FindAllString(manifests, -1); len(left) != 1 || !strings.Contains(left[0], "--configmapServerImage=") {
		t.Errorf("images from quay.io are left: %q", left)
	}
	if n := strings.Count(manifests, "image: "+olmImage); n != 3 {
		t.Errorf("the world's OLM image runs in %d containers, want 3 (olm-operator, catalog-operator, packageserver)", n)
	}
	for _, arg := range []string{"- --opmImage=" + opmImage + "\n", "- --util-image\n          -  " + olmImage + "\n"} {
		if !strings.Contains(manifests, arg) {
			t.Errorf("the catalog operator is not given %q", arg)
		}
	}
	if strings.Contains(manifests, "operatorhubio-catalog") {
		t.Error("the community catalog is installed")
	}
}
