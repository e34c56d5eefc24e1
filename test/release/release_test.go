// Package release proves that a release is installable by someone who has nothing but the
// registry: `make release` pushes into a real OCI registry on 127.0.0.1, and everything after the
// push comes from that registry only (the chart through `helm install oci://`, the operator binary
// out of the image the chart names, by digest), onto a real API server, as the chart's
// ServiceAccount, until a scenario converges. The OLM bundle and catalog images are pulled back
// too: opm renders the catalog from the registry (channel candidate, replacing 0.1.0), and the opm
// inside the catalog image validates the catalog inside it.
//
// It is a package of its own (not test/packaging) so that its few minutes (`make release` builds
// the image for two architectures) have their own `go test` timeout and run beside the packaging
// tests.
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/service-router/service-router-operator/internal/testenv"
)

const (
	// version is what the test releases: the committed chart and bundle are of Makefile's VERSION,
	// and `make release` refuses any other.
	version           = "0.2.0"
	releaseName       = "service-router-operator"
	releaseNamespace  = "service-router-system"
	imageRepository   = "service-router-operator"
	bundleRepository  = "service-router-operator-bundle"
	catalogRepository = "service-router-operator-catalog"
)

// operatorCRDs are the CRDs the chart installs, named here rather than read from config/: after
// the push nothing may come from the work tree.
var operatorCRDs = []string{
	"clusteridentities.cluster.router.io", "dnsconfigurations.cluster.router.io",
	"gateways.routing.router.io", "dnspolicies.routing.router.io", "serviceroutes.routing.router.io",
}

func TestRelease_InstallableFromTheRegistryAlone(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	helmBin := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helmBin); err != nil {
		t.Fatalf("%s not found: run `make test` (it builds bin/helm)", helmBin)
	}
	registry := startRegistry(t, root)
	t.Logf("registry on %s", registry)

	t.Run("without REGISTRY, make release fails at once and says why", func(t *testing.T) {
		out, err := makeCommand(root, "release").CombinedOutput()
		require.Error(t, err, "make release without REGISTRY must fail:\n%s", out)
		require.Contains(t, string(out), "REGISTRY is not set")
	})
	t.Run("a VERSION the committed chart and bundle are not of is refused before anything is pushed", func(t *testing.T) {
		out, err := makeCommand(root, "release", "VERSION=9.9.9", "REGISTRY="+registry, "REGISTRY_PLAIN_HTTP=true",
			"RELEASE_DIR="+t.TempDir()).CombinedOutput()
		require.Error(t, err, "make release VERSION=9.9.9 must fail:\n%s", out)
		require.Contains(t, string(out), "Chart.yaml is not version 9.9.9")
		resp, err := http.Get("http://" + registry + "/v2/" + imageRepository + "/tags/list")
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "nothing was pushed")
	})

	// A signing key of the release's own, as the release workflow has one in a secret: the
	// release signs with it, and the test verifies with the public half it kept.
	cosign := filepath.Join(root, "bin", "cosign")
	if _, err := os.Stat(cosign); err != nil {
		t.Fatalf("%s not found: run `make test` (it builds bin/cosign)", cosign)
	}
	signingKey, publicKey := cosignKeyPair(t, cosign)
	otherKey := func() string { _, pub := cosignKeyPair(t, cosign); return pub }()

	releaseDir := runRelease(t, root, registry, "COSIGN_PRIVATE_KEY="+signingKey, "COSIGN_PASSWORD="+cosignPassword)
	imageDigest := strings.TrimSpace(readFile(t, filepath.Join(releaseDir, "image.digest")))
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, imageDigest)
	checkReleaseFiles(t, releaseDir, registry, imageDigest)
	checkSignatures(t, cosign, releaseDir, registry, publicKey, otherKey)

	// From here on: the registry, the tools in bin/ (helm) and the test control plane only.
	env, err := testenv.Start(testenv.Options{SkipOperatorCRDs: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig, err := env.AdminKubeconfig()
	require.NoError(t, err)
	c := adminClient(t, env)
	ctx := context.Background()

	// As docs/INSTALLATION.md#install-from-the-registry says, from an empty directory with an
	// empty Helm configuration: the chart can only come from the registry.
	start := time.Now()
	out, err := runHelm(t, helmBin, "install", releaseName, "oci://"+registry+"/charts/service-router-operator",
		"--version", version, "--plain-http", "--namespace", releaseNamespace, "--create-namespace",
		"--kubeconfig", kubeconfig, "--wait=false")
	require.NoError(t, err, "helm install from the registry")
	t.Logf("helm install oci://%s/charts/service-router-operator --version %s: %s\n%s", registry, version, time.Since(start).Round(time.Millisecond), firstLines(out, 3))
	for _, name := range operatorCRDs {
		waitEstablished(t, c, name)
	}

	deployment := &appsv1.Deployment{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: releaseName}, deployment))
	container := deployment.Spec.Template.Spec.Containers[0]
	wantImage := registry + "/" + imageRepository + "@" + imageDigest
	require.Equal(t, wantImage, container.Image, "the chart names the pushed image by its digest")

	// The image the chart names, pulled by that digest, for this machine's architecture.
	start = time.Now()
	manager := pullBinary(t, registry, imageRepository, imageDigest, "linux", runtime.GOARCH, "manager")
	t.Logf("pulled %s for linux/%s and took /manager out of it: %s", container.Image, runtime.GOARCH, time.Since(start).Round(time.Millisecond))

	// Run as the chart's ServiceAccount would run it in the Pod: its token, the Deployment's
	// arguments (probe and metrics ports moved off fixed ports; the lease namespace is the Pod's).
	account := deployment.Spec.Template.Spec.ServiceAccountName
	require.NotEmpty(t, account)
	saKubeconfig := serviceAccountKubeconfig(t, env, releaseNamespace, account)
	args := managerArgs(container.Args)
	start = time.Now()
	stop := runManager(t, manager, saKubeconfig, args)
	defer stop()

	scenario := createScenario(t, c)
	waitUntil(t, 2*time.Minute, "the released operator to converge as "+account, func() string {
		return scenario.problem(ctx, c)
	})
	t.Logf("the operator from the registry converged the scenario as system:serviceaccount:%s:%s in %s (args %q)",
		releaseNamespace, account, time.Since(start).Round(time.Millisecond), args)

	bundleDigest := strings.TrimSpace(readFile(t, filepath.Join(releaseDir, "bundle.digest")))
	t.Run("bundle image", func(t *testing.T) {
		checkBundleImage(t, registry, bundleDigest, wantImage)
	})
	t.Run("catalog image", func(t *testing.T) {
		checkCatalogImage(t, root, registry, strings.TrimSpace(readFile(t, filepath.Join(releaseDir, "catalog.digest"))),
			registry+"/"+bundleRepository+"@"+bundleDigest)
	})
}

// startRegistry builds and starts hack/image/registry (go-containerregistry's registry package, a
// real implementation of the OCI distribution API) on a free port of 127.0.0.1 and returns its
// host:port. It is built before the release: nothing of the work tree is used after the push.
func startRegistry(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "registry")
	build := exec.Command("go", "build", "-o", bin, "./registry")
	build.Dir = filepath.Join(root, "hack", "image")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building hack/image/registry: %s", out)

	addrFile := filepath.Join(dir, "addr")
	var log bytes.Buffer
	cmd := exec.Command(bin, "--addr=127.0.0.1:0", "--addr-file="+addrFile)
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("registry log:\n%s", lastLines(log.String(), 40))
		}
	})
	var addr string
	waitUntil(t, 30*time.Second, "the registry to listen", func() string {
		data, err := os.ReadFile(addrFile)
		if err != nil {
			return err.Error()
		}
		addr = string(data)
		resp, err := http.Get("http://" + addr + "/v2/")
		if err != nil {
			return err.Error()
		}
		_ = resp.Body.Close()
		return ""
	})
	return addr
}

// makeCommand returns `make ARGS` in the repository, without the flags of an enclosing make
// (`make test` runs this test): its jobserver, -n or -k must not change what this make does.
func makeCommand(root string, args ...string) *exec.Cmd {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = root
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=") ||
			strings.HasPrefix(kv, "REGISTRY=") || strings.HasPrefix(kv, "VERSION=")
	})
	return cmd
}

// runRelease runs `make release` into the registry and returns the release directory. The image
// layout, the binaries and the release files go to temporary directories (the image rules want
// paths relative to the repository), so that the packaging tests reading dist/image meanwhile are
// not disturbed.
func runRelease(t *testing.T, root, registry string, env ...string) string {
	t.Helper()
	tmp := t.TempDir()
	rel, err := filepath.Rel(root, tmp)
	require.NoError(t, err)
	releaseDir := filepath.Join(tmp, "release")
	cmd := makeCommand(root, "release", "VERSION="+version, "REGISTRY="+registry, "REGISTRY_PLAIN_HTTP=true",
		"RELEASE_DIR="+releaseDir, "IMAGE_LAYOUT="+filepath.Join(rel, "image"), "IMAGE_BIN_DIR="+filepath.Join(rel, "image-binaries"),
		"RELEASE_SIGNING_KEY=env://COSIGN_PRIVATE_KEY", "PLUGIN_PLATFORMS="+strings.Join(releasedPluginPlatforms, " "))
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	require.NoError(t, err, "make release:\n%s", out.String())
	t.Logf("make release REGISTRY=%s VERSION=%s: %s; it printed:\n%s", registry, version, time.Since(start).Round(time.Second), lastLines(out.String(), 4))
	return releaseDir
}

// releasedPluginPlatforms are the kubectl plugin's platforms this test releases: Linux, as the
// image, and Windows, whose binary is named differently (kubectl-router.exe). macOS builds as Linux
// does (another GOOS) and is left out here because each platform is a cold cross-compilation of
// the plugin on a fresh machine; TestMakefile_PluginArchivesForEveryKubectlPlatform checks that
// `make release` builds it.
var releasedPluginPlatforms = []string{"linux/amd64", "linux/arm64", "windows/amd64"}

const cosignPassword = "release-test"

// cosignKeyPair generates an encrypted cosign key pair and returns the private key's PEM and the
// path of the public key.
func cosignKeyPair(t *testing.T, cosign string) (privatePEM, publicPath string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(cosign, "generate-key-pair")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD="+cosignPassword)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "cosign generate-key-pair: %s", out)
	return readFile(t, filepath.Join(dir, "cosign.key")), filepath.Join(dir, "cosign.pub")
}

// checkSignatures verifies, with the public key the test kept (not the cosign.pub of the release
// files, which anyone could replace together with the signatures), the signatures of the three
// images and the chart in the registry and of SHA256SUMS; with another key they do not verify.
func checkSignatures(t *testing.T, cosign, dir, registry, publicKey, otherKey string) {
	t.Helper()
	run := func(args ...string) error {
		cmd := exec.Command(cosign, args...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("cosign %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "images.txt"))), "\n") {
		// REPOSITORY:TAG@DIGEST, the chart with oci:// in front.
		line = strings.TrimPrefix(line, "oci://")
		nameTag, digest, ok := strings.Cut(line, "@")
		require.True(t, ok, "images.txt line %q has no digest", line)
		repo := nameTag[:strings.LastIndex(nameTag, ":")]
		refs[repo] = repo + "@" + digest
	}
	require.Len(t, refs, 4, "images.txt names the image, the bundle, the catalog and the chart: %v", refs)
	for _, ref := range refs {
		require.NoError(t, run("verify", "--key", publicKey, "--insecure-ignore-tlog=true", "--allow-http-registry", "--allow-insecure-registry", ref),
			"the signature of %s", ref)
		require.Error(t, run("verify", "--key", otherKey, "--insecure-ignore-tlog=true", "--allow-http-registry", "--allow-insecure-registry", ref),
			"%s verifies with another key", ref)
	}
	sums, sig := filepath.Join(dir, "SHA256SUMS"), filepath.Join(dir, "SHA256SUMS.sig")
	require.NoError(t, run("verify-blob", "--key", publicKey, "--signature", sig, "--insecure-ignore-tlog=true", sums), "the signature of SHA256SUMS")
	require.Error(t, run("verify-blob", "--key", otherKey, "--signature", sig, "--insecure-ignore-tlog=true", sums), "SHA256SUMS verifies with another key")
	t.Logf("signed with the release key and verified: %s and SHA256SUMS", strings.Join(sortedValues(refs), ", "))
}

func sortedValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// checkReleaseFiles checks what `make release` wrote besides pushing: every file listed in
// SHA256SUMS with its checksum (as `sha256sum -c` would), and an SPDX SBOM describing the pushed
// image and the Go modules of its binaries.
func checkReleaseFiles(t *testing.T, dir, registry, imageDigest string) {
	t.Helper()
	sums := strings.TrimSpace(readFile(t, filepath.Join(dir, "SHA256SUMS")))
	listed := map[string]bool{}
	for _, line := range strings.Split(sums, "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, "SHA256SUMS line %q", line)
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		got := sha256.Sum256(data)
		require.Equal(t, sum, hex.EncodeToString(got[:]), "checksum of %s", name)
		listed[name] = true
	}
	sbomName := "service-router-operator-" + version + ".spdx.json"
	for _, name := range []string{"service-router-operator-" + version + ".tgz", sbomName, "image.digest",
		"service-router-operator-linux-amd64", "service-router-operator-linux-arm64", "router.yaml"} {
		require.True(t, listed[name], "SHA256SUMS lists %s (it lists %v)", name, listed)
	}
	// Each plugin archive is listed, holds the binary krew links (kubectl-router.exe on Windows)
	// and the LICENSE, and the krew manifest names it with its checksum and that binary.
	krew := readFile(t, filepath.Join(dir, "router.yaml"))
	for _, platform := range releasedPluginPlatforms {
		archive := "kubectl-router-" + version + "-" + strings.ReplaceAll(platform, "/", "-") + ".tar.gz"
		require.True(t, listed[archive], "SHA256SUMS lists %s (it lists %v)", archive, listed)
		bin := "kubectl-router"
		if strings.HasPrefix(platform, "windows/") {
			bin += ".exe"
		}
		data, err := os.ReadFile(filepath.Join(dir, archive))
		require.NoError(t, err)
		require.Equal(t, []string{"LICENSE", bin}, tarNames(t, data), "the files of %s", archive)
		sum := sha256.Sum256(data)
		require.Contains(t, krew, "/"+archive+"\n    sha256: "+hex.EncodeToString(sum[:])+"\n    bin: "+bin+"\n",
			"the krew manifest names %s with its checksum and binary", archive)
	}

	var sbom struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name      string `json:"name"`
			Version   string `json:"versionInfo"`
			Checksums []struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"checksumValue"`
			} `json:"checksums"`
			ExternalRefs []struct {
				Locator string `json:"referenceLocator"`
			} `json:"externalRefs"`
			Purpose string `json:"primaryPackagePurpose"`
		} `json:"packages"`
		Relationships []struct {
			Element string `json:"spdxElementId"`
			Type    string `json:"relationshipType"`
		} `json:"relationships"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(dir, sbomName))), &sbom))
	require.Equal(t, "SPDX-2.3", sbom.SPDXVersion)
	purls := map[string]bool{}
	var imageChecksum string
	for _, p := range sbom.Packages {
		for _, r := range p.ExternalRefs {
			purls[r.Locator] = true
		}
		if p.Purpose == "CONTAINER" && len(p.Checksums) > 0 {
			imageChecksum = "sha256:" + p.Checksums[0].Value
		}
	}
	require.Equal(t, imageDigest, imageChecksum, "the SBOM describes the pushed image")
	for _, want := range []string{"pkg:golang/sigs.k8s.io/controller-runtime@", "pkg:golang/k8s.io/client-go@", "pkg:golang/stdlib@"} {
		found := false
		for purl := range purls {
			found = found || strings.HasPrefix(purl, want)
		}
		require.True(t, found, "the SBOM lists %s...", want)
	}
	t.Logf("SHA256SUMS lists %d files; the SBOM lists %d packages for %s/%s@%s", len(listed), len(sbom.Packages), registry, imageRepository, imageDigest)
}

// runHelm runs helm in an empty directory with empty configuration (no repositories, no
// credentials, no local chart to fall back on).
func runHelm(t *testing.T, helmBin string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBin, args...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"), "KUBECACHEDIR="+filepath.Join(home, "kube-cache"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// registryGet fetches a manifest or blob of the distribution API by digest and checks the content
// against the digest (what a container runtime does before trusting it).
func registryGet(t *testing.T, registry, repository, kind, digest string, accept ...string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+registry+"/v2/"+repository+"/"+kind+"/"+digest, nil)
	require.NoError(t, err)
	for _, a := range accept {
		req.Header.Add("Accept", a)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", req.URL, body)
	sum := sha256.Sum256(body)
	require.Equal(t, digest, "sha256:"+hex.EncodeToString(sum[:]), "content of %s %s", kind, digest)
	return body
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type imageManifest struct {
	Config descriptor   `json:"config"`
	Layers []descriptor `json:"layers"`
}

const (
	ociIndexType    = "application/vnd.oci.image.index.v1+json"
	ociManifestType = "application/vnd.oci.image.manifest.v1+json"
)

// pullBinary pulls the image index by digest, picks the image of os/arch, and returns the path of
// its file (e.g. "manager"), written to a temporary directory.
func pullBinary(t *testing.T, registry, repository, digest, os_, arch, file string) string {
	t.Helper()
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	require.NoError(t, json.Unmarshal(registryGet(t, registry, repository, "manifests", digest, ociIndexType), &index))
	var platforms []string
	var chosen *descriptor
	for i, d := range index.Manifests {
		require.NotNil(t, d.Platform, "manifest %s has no platform", d.Digest)
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		if d.Platform.OS == os_ && d.Platform.Architecture == arch {
			chosen = &index.Manifests[i]
		}
	}
	require.ElementsMatch(t, []string{"linux/amd64", "linux/arm64"}, platforms, "the pushed image is multi-arch")
	require.NotNil(t, chosen, "no image for %s/%s", os_, arch)

	var manifest imageManifest
	require.NoError(t, json.Unmarshal(registryGet(t, registry, repository, "manifests", chosen.Digest, ociManifestType), &manifest))
	files := layerFiles(t, registry, repository, manifest)
	binary, ok := files[file]
	require.True(t, ok, "the image has no /%s", file)
	path := filepath.Join(t.TempDir(), filepath.Base(file))
	require.NoError(t, os.WriteFile(path, binary, 0o755))
	return path
}

// layerFiles returns every regular file of the image's layers, by path without the leading "/".
func layerFiles(t *testing.T, registry, repository string, manifest imageManifest) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, layer := range manifest.Layers {
		blob := registryGet(t, registry, repository, "blobs", layer.Digest)
		var r io.Reader = bytes.NewReader(blob)
		if strings.HasSuffix(layer.MediaType, "+gzip") || strings.HasSuffix(layer.MediaType, ".gzip") {
			gz, err := gzip.NewReader(r)
			require.NoError(t, err)
			r = gz
		}
		eachTarEntry(t, r, func(h *tar.Header, content io.Reader) {
			if h.Typeflag != tar.TypeReg {
				return
			}
			data, err := io.ReadAll(content)
			require.NoError(t, err)
			files[strings.TrimPrefix(h.Name, "/")] = data
		})
	}
	return files
}

// eachTarEntry calls f with every entry of a tar stream and a reader of its content.
func eachTarEntry(t *testing.T, r io.Reader, f func(*tar.Header, io.Reader)) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		f(h, tr)
	}
}

// serviceAccountKubeconfig returns a kubeconfig authenticating with a token the API server issued
// for the ServiceAccount (TokenRequest, as the kubelet projects one into the Pod).
func serviceAccountKubeconfig(t *testing.T, env *testenv.Env, namespace, account string) string {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	expiry := int64(3600)
	token, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), account,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	require.NoError(t, err, "a token for the chart's ServiceAccount %s/%s", namespace, account)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: account}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// managerArgs are the Deployment's arguments with the ports a Pod has to itself moved to 0 (any
// free port is fine outside a Pod) and the lease namespace the Pod would read from its service
// account mount.
func managerArgs(deploymentArgs []string) []string {
	var args []string
	for _, a := range deploymentArgs {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="), strings.HasPrefix(a, "--health-probe-bind-address="):
			name, _, _ := strings.Cut(a, "=")
			args = append(args, name+"=0")
		default:
			args = append(args, a)
		}
	}
	return append(args, "--leader-election-namespace="+releaseNamespace)
}

// runManager starts the operator binary; the returned function stops it (SIGTERM, as a Pod is
// stopped) and logs its output when the test failed.
func runManager(t *testing.T, bin, kubeconfig string, args []string) func() {
	t.Helper()
	var output bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("the released operator's output:\n%s", lastLines(output.String(), 60))
		}
	}
	t.Cleanup(stop)
	return stop
}

// scenarioYAML is one of everything, as a user applies it: identity, DNS configuration, a Gateway
// with its ingress LoadBalancer Service, a DNSPolicy and a ServiceRoute.
const scenarioYAML = `
apiVersion: v1
kind: Namespace
metadata: {name: myapp}
---
apiVersion: v1
kind: Namespace
metadata: {name: istio-system}
---
apiVersion: cluster.router.io/v1alpha1
kind: ClusterIdentity
metadata: {name: cluster-identity}
spec: {region: weu, cluster: aks01, domain: example.com, environmentLetter: d}
---
apiVersion: cluster.router.io/v1alpha1
kind: DNSConfiguration
metadata: {name: dns-config}
spec:
  externalDNSControllers:
    - {name: external-dns-weu, region: weu}
---
apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata: {name: default-gateway, namespace: istio-system}
spec: {controller: ingressgateway-internal, credentialName: cert, targetPostfix: internal}
---
apiVersion: v1
kind: Service
metadata:
  name: ingressgateway-internal
  namespace: istio-system
  labels: {istio: ingressgateway-internal}
spec:
  type: LoadBalancer
  ports: [{port: 443}]
---
apiVersion: routing.router.io/v1alpha1
kind: DNSPolicy
metadata: {name: dns, namespace: myapp}
spec: {mode: Active}
---
apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata: {name: api-route, namespace: myapp}
spec: {serviceName: api, gatewayName: default-gateway, gatewayNamespace: istio-system, environment: dev, application: myapp}
`

const ingressIP = "10.1.2.3"

type scenario struct{}

func createScenario(t *testing.T, c client.Client) scenario {
	t.Helper()
	ctx := context.Background()
	for _, doc := range strings.Split(scenarioYAML, "\n---\n") {
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
		require.NoError(t, c.Create(ctx, obj), "creating %s %s", obj.GetKind(), obj.GetName())
		if obj.GetKind() == "Service" {
			// The cloud controller's address for the load balancer.
			require.NoError(t, unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"ip": ingressIP}}, "status", "loadBalancer", "ingress"))
			require.NoError(t, c.Status().Update(ctx, obj))
		}
	}
	return scenario{}
}

// problem says what has not converged yet ("" when everything has): every object Ready, the
// route's CNAME and the gateway's A record published as DNSEndpoints, the Istio Gateway written.
func (scenario) problem(ctx context.Context, c client.Client) string {
	for _, o := range []struct {
		group, kind, namespace, name string
	}{
		{"cluster.router.io", "ClusterIdentity", "", "cluster-identity"},
		{"cluster.router.io", "DNSConfiguration", "", "dns-config"},
		{"routing.router.io", "Gateway", "istio-system", "default-gateway"},
		{"routing.router.io", "DNSPolicy", "myapp", "dns"},
		{"routing.router.io", "ServiceRoute", "myapp", "api-route"},
	} {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: o.group, Version: "v1alpha1", Kind: o.kind})
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.namespace, Name: o.name}, obj); err != nil {
			return err.Error()
		}
		if !conditionTrue(obj, "Ready") {
			conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			return fmt.Sprintf("%s %s not Ready: %v", o.kind, o.name, conditions)
		}
	}
	records := map[string]string{}
	endpoints := &unstructured.UnstructuredList{}
	endpoints.SetGroupVersionKind(schema.GroupVersionKind{Group: "externaldns.k8s.io", Version: "v1alpha1", Kind: "DNSEndpointList"})
	if err := c.List(ctx, endpoints); err != nil {
		return err.Error()
	}
	for _, ep := range endpoints.Items {
		list, _, _ := unstructured.NestedSlice(ep.Object, "spec", "endpoints")
		for _, e := range list {
			m, _ := e.(map[string]any)
			targets, _, _ := unstructured.NestedStringSlice(m, "targets")
			records[fmt.Sprint(m["dnsName"])+" "+fmt.Sprint(m["recordType"])] = strings.Join(targets, ",")
		}
	}
	want := map[string]string{
		"api-ns-d-dev-myapp.example.com CNAME": "aks01-weu-internal.example.com",
		"aks01-weu-internal.example.com A":     ingressIP,
	}
	for record, target := range want {
		if records[record] != target {
			return fmt.Sprintf("DNSEndpoint record %s → %q, want %q (published: %v)", record, records[record], target, records)
		}
	}
	istioGateway := &unstructured.Unstructured{}
	istioGateway.SetGroupVersionKind(schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "Gateway"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: "istio-system", Name: "default-gateway"}, istioGateway); err != nil {
		return "the Istio Gateway: " + err.Error()
	}
	return ""
}

func conditionTrue(obj *unstructured.Unstructured, conditionType string) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == conditionType && m["status"] == "True" {
			return true
		}
	}
	return false
}

// checkBundleImage pulls the bundle image by the digest make release pushed it under: OLM's
// labels (package, channel), and a CSV naming the operator image by its pushed digest.
func checkBundleImage(t *testing.T, registry, digest, operatorImage string) {
	t.Helper()
	var manifest imageManifest
	require.NoError(t, json.Unmarshal(registryGet(t, registry, bundleRepository, "manifests", digest, ociManifestType), &manifest))
	var config struct {
		Config struct {
			Labels map[string]string `json:"Labels"`
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal(registryGet(t, registry, bundleRepository, "blobs", manifest.Config.Digest), &config))
	labels := config.Config.Labels
	require.Equal(t, "registry+v1", labels["operators.operatorframework.io.bundle.mediatype.v1"])
	require.Equal(t, "service-router-operator", labels["operators.operatorframework.io.bundle.package.v1"])
	require.Equal(t, "candidate", labels["operators.operatorframework.io.bundle.channels.v1"])
	require.Equal(t, "manifests/", labels["operators.operatorframework.io.bundle.manifests.v1"])

	files := layerFiles(t, registry, bundleRepository, manifest)
	csv, ok := files["manifests/service-router-operator.clusterserviceversion.yaml"]
	require.True(t, ok, "the bundle image has no CSV under manifests/")
	require.Contains(t, files, "metadata/annotations.yaml")
	require.Contains(t, string(csv), "image: "+operatorImage, "the CSV's Deployment runs the pushed image by digest")
	require.NotContains(t, string(csv), imageRepository+":v", "no image is named by a tag")
	require.Contains(t, string(csv), "replaces: service-router-operator.v0.1.0")
	t.Logf("bundle image %s/%s@%s: %d files, labels of package %s channel %s", registry, bundleRepository, digest, len(files),
		labels["operators.operatorframework.io.bundle.package.v1"], labels["operators.operatorframework.io.bundle.channels.v1"])
}

// checkCatalogImage renders the pushed catalog image with opm, as OLM reads it (the package, its
// default channel candidate, the entry replacing 0.1.0, the bundle by digest), then takes the opm
// binary for this architecture and the catalog out of the image and has that opm validate it: the
// server a CatalogSource runs works on what it serves.
func checkCatalogImage(t *testing.T, root, registry, digest, bundleImage string) {
	t.Helper()
	opm := filepath.Join(root, "bin", "opm")
	ref := registry + "/" + catalogRepository + "@" + digest
	cmd := exec.Command(opm, "render", ref, "--use-http", "--output=json")
	cmd.Dir = t.TempDir()
	// opm pulls with containers/image, which wants a signature policy (policy.json) before it
	// pulls anything; a user without /etc/containers/policy.json writes one like this.
	policy := filepath.Join(cmd.Dir, ".config", "containers", "policy.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(policy), 0o755))
	require.NoError(t, os.WriteFile(policy, []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o644))
	cmd.Env = append(os.Environ(), "HOME="+cmd.Dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "opm render %s: %s", ref, stderr.String())

	type entry struct {
		Name     string `json:"name"`
		Replaces string `json:"replaces"`
	}
	var (
		defaultChannel string
		entries        = map[string][]entry{}
		bundles        = map[string]string{}
	)
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var blob struct {
			Schema         string  `json:"schema"`
			Name           string  `json:"name"`
			Package        string  `json:"package"`
			DefaultChannel string  `json:"defaultChannel"`
			Entries        []entry `json:"entries"`
			Image          string  `json:"image"`
		}
		require.NoError(t, dec.Decode(&blob), "opm render output:\n%s", out)
		switch blob.Schema {
		case "olm.package":
			require.Equal(t, "service-router-operator", blob.Name)
			defaultChannel = blob.DefaultChannel
		case "olm.channel":
			entries[blob.Name] = blob.Entries
		case "olm.bundle":
			bundles[blob.Name] = blob.Image
		}
	}
	require.Equal(t, "candidate", defaultChannel, "the package's default channel")
	require.Equal(t, []entry{{Name: "service-router-operator.v" + version, Replaces: "service-router-operator.v0.1.0"}}, entries["candidate"],
		"the candidate channel lists the bundle, replacing 0.1.0")
	require.Equal(t, map[string]string{"service-router-operator.v" + version: bundleImage}, bundles, "the bundle, by the digest it was pushed under")

	path := pullBinary(t, registry, catalogRepository, digest, "linux", runtime.GOARCH, "bin/opm")
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	require.NoError(t, json.Unmarshal(registryGet(t, registry, catalogRepository, "manifests", digest, ociIndexType), &index))
	configs := t.TempDir()
	for _, d := range index.Manifests {
		if d.Platform.Architecture != runtime.GOARCH {
			continue
		}
		var manifest imageManifest
		require.NoError(t, json.Unmarshal(registryGet(t, registry, catalogRepository, "manifests", d.Digest, ociManifestType), &manifest))
		var config struct {
			Config struct {
				Entrypoint []string          `json:"Entrypoint"`
				Cmd        []string          `json:"Cmd"`
				Labels     map[string]string `json:"Labels"`
			} `json:"config"`
		}
		require.NoError(t, json.Unmarshal(registryGet(t, registry, catalogRepository, "blobs", manifest.Config.Digest), &config))
		require.Equal(t, "/configs", config.Config.Labels["operators.operatorframework.io.index.configs.v1"])
		require.Equal(t, []string{"/bin/opm", "serve", "/configs"}, append(config.Config.Entrypoint, config.Config.Cmd...))
		for name, data := range layerFiles(t, registry, catalogRepository, manifest) {
			if rel, ok := strings.CutPrefix(name, "configs/"); ok {
				require.NoError(t, os.MkdirAll(filepath.Join(configs, filepath.Dir(rel)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(configs, rel), data, 0o644))
			}
		}
	}
	validate, err := exec.Command(path, "validate", configs).CombinedOutput()
	require.NoError(t, err, "the image's opm validate of the image's /configs: %s", validate)

	// The image's opm serves the image's catalog, as the CatalogSource's Pod runs it (its
	// temporary directory elsewhere than the image's /tmp, which layerDirs checks).
	require.Contains(t, layerDirs(t, registry, catalogRepository, index.Manifests), "tmp/ 1777", "the catalog image has a /tmp opm serve can write to")
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := listener.Addr().(*net.TCPAddr).Port
	require.NoError(t, listener.Close())
	var serveLog bytes.Buffer
	serve := exec.Command(path, "serve", configs, "--port", fmt.Sprint(port), "--pprof-addr", "127.0.0.1:0")
	serve.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	require.NoError(t, serve.Start())
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	waitUntil(t, 30*time.Second, "the image's opm to serve the catalog", func() string {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return err.Error() + "\n" + serveLog.String()
		}
		_ = conn.Close()
		return ""
	})
	t.Logf("catalog image %s: opm render lists %s in channel candidate replacing v0.1.0; the image's own opm (linux/%s) validates and serves its /configs",
		ref, "service-router-operator.v"+version, runtime.GOARCH)
}

// layerDirs returns "path mode" of every directory in the layers of the images of the index's
// manifests.
func layerDirs(t *testing.T, registry, repository string, manifests []descriptor) []string {
	t.Helper()
	var dirs []string
	for _, d := range manifests {
		var manifest imageManifest
		require.NoError(t, json.Unmarshal(registryGet(t, registry, repository, "manifests", d.Digest, ociManifestType), &manifest))
		for _, layer := range manifest.Layers {
			gz, err := gzip.NewReader(bytes.NewReader(registryGet(t, registry, repository, "blobs", layer.Digest)))
			require.NoError(t, err)
			eachTarEntry(t, gz, func(h *tar.Header, _ io.Reader) {
				if h.Typeflag == tar.TypeDir {
					dirs = append(dirs, fmt.Sprintf("%s %o", h.Name, h.Mode&0o7777))
				}
			})
		}
	}
	return dirs
}

func adminClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	scheme := env.Scheme
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

func waitEstablished(t *testing.T, c client.Client, name string) {
	t.Helper()
	waitUntil(t, time.Minute, "CRD "+name+" to be established", func() string {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			return err.Error()
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return ""
			}
		}
		return "not established"
	})
}

// waitUntil polls check until it returns "" or timeout passes, then fails with the last problem.
func waitUntil(t *testing.T, timeout time.Duration, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		problem := check()
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, problem)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// tarNames lists the files of a gzipped tar archive, sorted.
func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	var names []string
	eachTarEntry(t, gz, func(h *tar.Header, _ io.Reader) { names = append(names, h.Name) })
	slices.Sort(names)
	return names
}
