package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// OLMVersion is the operator-lifecycle-manager release the node world installs (hack/tools/olm,
// `make olm`): the only v0 release the module proxy serves here, and the current upstream one
// (docs/INSTALLATION.md#olm says which releases OperatorHub clusters run).
const (
	OLMVersion   = "v0.38.0"
	olmModule    = "github.com/operator-framework/operator-lifecycle-manager"
	OLMNamespace = "olm"
	// The template of the community catalog (quay.io/operatorhubio/catalog, from outside the world).
	olmCommunityCatalog = "0000_50_olm_17-upstream-operators.catalogsource.yaml"
)

// OLMCommands are the commands upstream's OLM image holds (its Dockerfile copies goreleaser's
// builds to /bin), as `make olm` builds them into bin/olm.
var OLMCommands = []string{"olm", "catalog", "package-server", "copy-content", "cpb"}

// OLM is OLM v0 installed in the node world from its own manifests.
type OLM struct {
	// Image is the world's OLM image by digest (olm, catalog, package-server, copy-content, cpb
	// and cp in /bin); OPMImage opm's (the bundle unpack Job's extract container runs `opm`).
	Image, OPMImage string
	// Manifests are the files applied: crds.yaml and olm.yaml as the world's copies.
	CRDs, Manifests string
	// Took is how long the install took, from the first image push to packageserver's CSV.
	Took time.Duration
	// PackageServer is the phase packageserver's CSV reached (see InstallOLM).
	PackageServer string
}

// InstallOLM installs OLM v0.38.0 from the manifests its release publishes (crds.yaml and
// olm.yaml, which install.sh applies), made as the release makes them: `make release` in OLM's
// repository renders the module's Helm chart (deploy/chart) with deploy/upstream/values.yaml and
// the release's image references (scripts/package_release.sh) and concatenates the CRDs into
// crds.yaml and the rest into olm.yaml (scripts/package_quickstart.sh). The module's own
// deploy/upstream/quickstart files are not those: they are v0.18.3's, never regenerated (their
// olm.yaml lacks the OLMConfig CRD v0.38.0's olm operator lists, and passes the catalog operator
// single-dash flags its cobra command line rejects). Only the image references differ from the
// release: the OLM image (olm, catalog and package images) is the world's, built from bin/olm as
// upstream's Dockerfile lays it out (with test/e2e/framework/cp as the /bin/cp upstream's
// distroless:debug base has from busybox), the opm image (--opmImage, what the bundle unpack
// Job's extract container runs) the world's opm; and the community CatalogSource
// (quay.io/operatorhubio/catalog) is left out. The catalog operator's --configmapServerImage stays
// upstream's: only a CatalogSource of the deprecated sourceType configmap runs it, none here.
// Then install.sh's commands: crds.yaml applied and Established, olm.yaml applied, olm-operator
// and catalog-operator rolled out, packageserver's CSV waited for.
func (w *NodeWorld) InstallOLM(ctx context.Context) (*OLM, error) {
	start := time.Now()
	files := map[string]string{}
	for _, c := range OLMCommands {
		path := filepath.Join(w.assets, "olm", c)
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s not found: run `make olm` (it builds OLM %s into bin/olm)", path, OLMVersion)
		}
		files["/bin/"+c] = path
	}
	binDir := filepath.Join(w.Dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	cp, err := buildStatic(ctx, w.root, "test/e2e/framework/cp", binDir)
	if err != nil {
		return nil, err
	}
	files["/bin/cp"] = cp
	olmImage, err := PushBinaryImage(ctx, w.Registry, BinaryImage{
		Repository: "operator-framework/olm", Tag: OLMVersion, Files: files,
		Entrypoint: []string{"/bin/olm"}, User: "1001",
	})
	if err != nil {
		return nil, err
	}
	opm := filepath.Join(w.assets, "opm")
	if _, err := os.Stat(opm); err != nil {
		return nil, fmt.Errorf("%s not found: run `make opm`", opm)
	}
	opmImage, err := PushBinaryImage(ctx, w.Registry, BinaryImage{
		Repository: "operator-framework/opm", Tag: "v1.61.0", Files: map[string]string{"/bin/opm": opm},
		Entrypoint: []string{"/bin/opm"}, User: "65532:65532",
	})
	if err != nil {
		return nil, err
	}
	dir, err := w.olmModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	crds, manifests, err := w.renderOLMRelease(ctx, dir, olmImage, opmImage)
	if err != nil {
		return nil, err
	}
	o := &OLM{Image: olmImage, OPMImage: opmImage,
		CRDs: filepath.Join(w.Dir, "olm-crds.yaml"), Manifests: filepath.Join(w.Dir, "olm.yaml")}
	if err := os.WriteFile(o.CRDs, []byte(crds), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(o.Manifests, []byte(manifests), 0o644); err != nil {
		return nil, err
	}
	// install.sh's commands, with the world's files for its URLs. The CRDs are applied server-side:
	// the ClusterServiceVersion CRD is too large for the last-applied annotation of a client-side
	// apply on this kubectl.
	script := fmt.Sprintf(`
kubectl apply --server-side -f %[1]s
kubectl wait --for=condition=Established -f %[1]s
kubectl apply -f %[2]s
kubectl rollout status -w deployment/olm-operator --namespace=olm --timeout=180s
kubectl rollout status -w deployment/catalog-operator --namespace=olm --timeout=180s
`, o.CRDs, o.Manifests)
	if out, err := w.Cluster().RunScript(ctx, script); err != nil {
		return o, fmt.Errorf("installing OLM: %w\n%s\n%s", err, out, w.Diagnostics(ctx, OLMNamespace))
	}
	// packageserver: OLM installs it from its own CSV. Waited for as install.sh does, but for 30 s
	// and not required: its pods run, but its APIService stays unavailable (the API server's
	// discovery check gets 403) because the world's API server has no aggregation layer
	// configured (no --requestheader-* or --proxy-client-* flags), so the CSV stays Installing.
	// PackageManifests (`kubectl get packagemanifests`, the OperatorHub console's list) need it;
	// CatalogSources, Subscriptions, InstallPlans and CSVs do not.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := exec.CommandContext(ctx, filepath.Join(w.assets, "kubectl"), "--kubeconfig", w.Kubeconfig,
			"-n", OLMNamespace, "get", "csv", "packageserver", "-o", "jsonpath={.status.phase}").Output()
		o.PackageServer = strings.TrimSpace(string(out))
		if o.PackageServer == "Succeeded" || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	o.Took = time.Since(start)
	return o, nil
}

// renderOLMRelease renders the OLM module's chart as OLM's release does (package_release.sh: helm
// template with deploy/upstream/values.yaml, the image references set) and concatenates it as
// package_quickstart.sh does (every file in name order, comment lines dropped; *.crd.yaml files
// into the CRDs, the rest into the manifests), leaving out the community catalog.
func (w *NodeWorld) renderOLMRelease(ctx context.Context, moduleDir, olmImage, opmImage string) (crds, manifests string, err error) {
	helm, err := HelmBinary()
	if err != nil {
		return "", "", err
	}
	out := filepath.Join(w.Dir, "olm-release")
	cmd := exec.CommandContext(ctx, helm, "template", "-n", OLMNamespace,
		"-f", filepath.Join(moduleDir, "deploy", "upstream", "values.yaml"), "--include-crds",
		"--set", "olm.image.ref="+olmImage, "--set", "catalog.image.ref="+olmImage, "--set", "package.image.ref="+olmImage,
		"--set", "catalog.opmImageArgs=--opmImage="+opmImage,
		"--output-dir", out, filepath.Join(moduleDir, "deploy", "chart"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("helm template of OLM's chart: %v\n%s", err, msg)
	}
	return concatOLMRelease(filepath.Join(out, "olm"))
}

// concatOLMRelease is package_quickstart.sh over the rendered chart's crds/ and templates/.
func concatOLMRelease(dir string) (crds, manifests string, err error) {
	var c, m strings.Builder
	for _, sub := range []string{"crds", "templates"} {
		files, err := filepath.Glob(filepath.Join(dir, sub, "*.yaml"))
		if err != nil {
			return "", "", err
		}
		slices.SortFunc(files, func(a, b string) int { return strings.Compare(filepath.Base(a), filepath.Base(b)) })
		for _, f := range files {
			if filepath.Base(f) == olmCommunityCatalog {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				return "", "", err
			}
			to := &m
			if strings.HasSuffix(f, ".crd.yaml") {
				to = &c
			}
			for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
				if i == 0 && !strings.HasPrefix(line, "---") {
					to.WriteString("---\n")
				}
				if strings.HasPrefix(strings.TrimSpace(line), "#") {
					continue
				}
				to.WriteString(line + "\n")
			}
		}
	}
	if c.Len() == 0 || m.Len() == 0 {
		return "", "", fmt.Errorf("rendering OLM's chart into %s gave no CRDs or no manifests", dir)
	}
	return c.String(), m.String(), nil
}

// olmModuleDir is the operator-lifecycle-manager module's directory, of the version hack/tools/olm
// pins (downloaded by `make olm`).
func (w *NodeWorld) olmModuleDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", olmModule)
	cmd.Dir = filepath.Join(w.root, "hack", "tools", "olm")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the %s module: %w", olmModule, err)
	}
	var module struct{ Dir, Version string }
	if err := json.Unmarshal(out, &module); err != nil || module.Dir == "" {
		return "", fmt.Errorf("go mod download -json %s: no module directory in %s", olmModule, out)
	}
	if module.Version != OLMVersion {
		return "", fmt.Errorf("hack/tools/olm pins %s %s, the framework installs %s", olmModule, module.Version, OLMVersion)
	}
	return module.Dir, nil
}
