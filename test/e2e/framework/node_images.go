package framework

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BinaryImage is a container image made of static binaries on an empty base, as the operator's
// own image is: what the node world runs that users would pull from elsewhere (the pause image,
// ExternalDNS' slim build, the tests' helper servers).
type BinaryImage struct {
	// Repository and Tag name the image in the registry, e.g. "external-dns" and "v0.23.0".
	Repository, Tag string
	// Files maps a path in the image to the file on this machine to copy there (mode 0755).
	Files map[string]string
	// Entrypoint is the image's entrypoint; User the user and group it runs as ("65532:65532").
	Entrypoint []string
	User       string
}

// PushBinaryImage builds img as a one-layer OCI image for this machine's platform and pushes it
// to the plain-HTTP registry at registry (host:port) with the distribution API, as `docker push`
// would. It returns the reference by digest.
func PushBinaryImage(ctx context.Context, registry string, img BinaryImage) (string, error) {
	layer, diffID, err := binaryLayer(img.Files)
	if err != nil {
		return "", err
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": img.Entrypoint, "User": img.User},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	if err != nil {
		return "", err
	}
	repo := strings.TrimSuffix(registry, "/") + "/" + img.Repository
	base := "http://" + registry + "/v2/" + img.Repository
	layerDigest, err := pushBlob(ctx, base, layer)
	if err != nil {
		return "", fmt.Errorf("pushing %s's layer: %w", repo, err)
	}
	configDigest, err := pushBlob(ctx, base, config)
	if err != nil {
		return "", fmt.Errorf("pushing %s's config: %w", repo, err)
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": configDigest, "size": len(config)},
		"layers":        []map[string]any{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layerDigest, "size": len(layer)}},
	})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/manifests/"+img.Tag, bytes.NewReader(manifest))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	if err := do(req, http.StatusCreated); err != nil {
		return "", fmt.Errorf("pushing %s:%s: %w", repo, img.Tag, err)
	}
	return repo + "@" + digestOf(manifest), nil
}

func binaryLayer(files map[string]string) (layer []byte, diffID string, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for imagePath, hostPath := range files {
		data, err := os.ReadFile(hostPath)
		if err != nil {
			return nil, "", err
		}
		hdr := &tar.Header{Name: strings.TrimPrefix(imagePath, "/"), Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), digestOf(raw.Bytes()), nil
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// pushBlob uploads data in one request (a monolithic upload: POST, then PUT with the digest).
func pushBlob(ctx context.Context, base string, data []byte) (string, error) {
	digest := digestOf(data)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/blobs/uploads/", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("starting an upload: %s", resp.Status)
	}
	location, err := resp.Location()
	if err != nil {
		return "", err
	}
	q := location.Query()
	q.Set("digest", digest)
	location.RawQuery = q.Encode()
	req, err = http.NewRequestWithContext(ctx, http.MethodPut, location.String(), bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	return digest, do(req, http.StatusCreated)
}

func do(req *http.Request, want int) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Redacted(), resp.Status, body)
	}
	return nil
}

// buildStatic builds the main package at pkgDir (relative to the repository root) as a static
// binary into dir and returns its path.
func buildStatic(ctx context.Context, root, pkgDir, dir string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkgDir))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./"+pkgDir)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v: %s", pkgDir, err, msg)
	}
	return out, nil
}
