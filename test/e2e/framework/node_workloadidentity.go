package framework

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// What AKS's workload identity webhook (Azure/azure-workload-identity, v1) reads and writes.
const (
	// WorkloadIdentityUseLabel selects the pods the webhook mutates (its objectSelector).
	WorkloadIdentityUseLabel = "azure.workload.identity/use"
	// WorkloadIdentityClientIDAnnotation on a service account is the identity's client ID.
	WorkloadIdentityClientIDAnnotation = "azure.workload.identity/client-id"
	// WorkloadIdentityTenantIDAnnotation on a service account overrides the cluster's tenant.
	WorkloadIdentityTenantIDAnnotation = "azure.workload.identity/tenant-id"
	// WorkloadIdentityTokenExpirationAnnotation on the pod or its service account sets the token's
	// lifetime in seconds (3600 to 86400; default 3600).
	WorkloadIdentityTokenExpirationAnnotation = "azure.workload.identity/service-account-token-expiration"
	// WorkloadIdentitySkipContainersAnnotation on the pod lists containers (";"-separated) left alone.
	WorkloadIdentitySkipContainersAnnotation = "azure.workload.identity/skip-containers"

	// WorkloadIdentityTokenVolume is the projected service account token volume the webhook adds,
	// mounted read-only at WorkloadIdentityTokenDir; AZURE_FEDERATED_TOKEN_FILE names
	// WorkloadIdentityTokenFile in it.
	WorkloadIdentityTokenVolume = "azure-identity-token"
	WorkloadIdentityTokenDir    = "/var/run/secrets/azure/tokens"
	WorkloadIdentityTokenFile   = WorkloadIdentityTokenDir + "/azure-identity-token"
	// WorkloadIdentityAudience is the projected token's audience.
	WorkloadIdentityAudience = "api://AzureADTokenExchange"

	workloadIdentityWebhookName = "mutation.azure-workload-identity.io"
	workloadIdentityConfigName  = "azure-wi-webhook-mutating-webhook-configuration"
	workloadIdentityPath        = "/mutate-v1-pod"
)

// WorkloadIdentityOptions is the webhook's own configuration (on AKS, what the add-on is
// installed with).
type WorkloadIdentityOptions struct {
	// TenantID is the cluster's tenant (AZURE_TENANT_ID of pods whose service account names none).
	TenantID string
	// AuthorityHost is the Microsoft Entra ID endpoint of the webhook's cloud (AZURE_AUTHORITY_HOST;
	// https://login.microsoftonline.com/ in Azure's public cloud).
	AuthorityHost string
}

// WorkloadIdentityWebhook is AKS's workload identity webhook as the node world runs it: a
// mutating admission webhook served by the test process over HTTPS on the first node's address,
// registered for pod creation with the objectSelector, failure policy and reinvocation of the
// real one (azure-wi-webhook-mutating-webhook-configuration). To every container (and init
// container) of a pod labelled azure.workload.identity/use=true, except those its
// skip-containers annotation names, it adds what the real webhook adds, unless the container sets
// it already: AZURE_CLIENT_ID (the service account's azure.workload.identity/client-id),
// AZURE_TENANT_ID (its azure.workload.identity/tenant-id, else the cluster's), AZURE_AUTHORITY_HOST
// and AZURE_FEDERATED_TOKEN_FILE, and the projected service account token volume
// azure-identity-token (audience api://AzureADTokenExchange, 3600 s unless annotated) mounted
// read-only at /var/run/secrets/azure/tokens. Not implemented: the proxy sidecar
// (inject-proxy-sidecar), which a pod using the Azure SDK does not need.
type WorkloadIdentityWebhook struct {
	// URL is the webhook's endpoint, as its MutatingWebhookConfiguration names it.
	URL  string
	opts WorkloadIdentityOptions
	c    client.Client
	srv  *http.Server

	mu      sync.Mutex
	mutated []string
}

// StartWorkloadIdentityWebhook starts the webhook, registers it and returns once the API server
// calls it (a dry-run pod of the default service account comes back with the token volume).
func (w *NodeWorld) StartWorkloadIdentityWebhook(ctx context.Context, c Cleanup, opts WorkloadIdentityOptions) (*WorkloadIdentityWebhook, error) {
	cert, caPEM, err := webhookCertificate(net.ParseIP(NodeIP(1)))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(NodeIP(1), "0"))
	if err != nil {
		return nil, err
	}
	wh := &WorkloadIdentityWebhook{URL: "https://" + ln.Addr().String() + workloadIdentityPath, opts: opts, c: w.Client}
	mux := http.NewServeMux()
	mux.Handle(workloadIdentityPath, &admission.Webhook{Handler: wh})
	wh.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = wh.srv.ServeTLS(ln, "", "") }()
	if c != nil {
		c.Cleanup(func() { _ = wh.srv.Close() })
	}

	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: workloadIdentityConfigName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         workloadIdentityWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &wh.URL, CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{WorkloadIdentityUseLabel: "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			AdmissionReviewVersions: []string{"v1", "v1beta1"},
		}},
	}
	if err := w.Client.Create(ctx, cfg); err != nil {
		return nil, fmt.Errorf("registering the workload identity webhook: %w", err)
	}
	probe := func(ctx context.Context) (bool, string, error) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "workload-identity-probe-", Labels: map[string]string{WorkloadIdentityUseLabel: "true"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: w.Registry + "/" + pauseRepository + ":" + pauseTag}}},
		}
		if err := w.Client.Create(ctx, pod, client.DryRunAll); err != nil {
			return false, err.Error(), nil
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == WorkloadIdentityTokenVolume {
				return true, "", nil
			}
		}
		return false, "a dry-run pod was admitted without the token volume", nil
	}
	if err := Poll(ctx, 30*time.Second, 200*time.Millisecond, "the API server calling the workload identity webhook", probe); err != nil {
		return nil, err
	}
	return wh, nil
}

// Mutated lists the pods the webhook mutated, as namespace/name (generateName for a pod not yet
// named), in order.
func (wh *WorkloadIdentityWebhook) Mutated() []string {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	return slices.Clone(wh.mutated)
}

// Handle mutates one pod's creation.
func (wh *WorkloadIdentityWebhook) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	saName := pod.Spec.ServiceAccountName
	if saName == "" {
		saName = "default"
	}
	sa := &corev1.ServiceAccount{}
	if err := wh.c.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: saName}, sa); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("service account %s/%s: %w", req.Namespace, saName, err))
	}
	expiration, err := tokenExpiration(pod, sa)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	tenant := wh.opts.TenantID
	if t, ok := sa.Annotations[WorkloadIdentityTenantIDAnnotation]; ok {
		tenant = t
	}
	env := []corev1.EnvVar{
		{Name: "AZURE_CLIENT_ID", Value: sa.Annotations[WorkloadIdentityClientIDAnnotation]},
		{Name: "AZURE_TENANT_ID", Value: tenant},
		{Name: "AZURE_FEDERATED_TOKEN_FILE", Value: WorkloadIdentityTokenFile},
		{Name: "AZURE_AUTHORITY_HOST", Value: wh.opts.AuthorityHost},
	}
	var skip []string
	for s := range strings.SplitSeq(pod.Annotations[WorkloadIdentitySkipContainersAnnotation], ";") {
		if s = strings.TrimSpace(s); s != "" {
			skip = append(skip, s)
		}
	}
	mutate := func(containers []corev1.Container) {
		for i := range containers {
			c := &containers[i]
			if slices.Contains(skip, c.Name) {
				continue
			}
			for _, e := range env {
				if e.Value != "" && !slices.ContainsFunc(c.Env, func(have corev1.EnvVar) bool { return have.Name == e.Name }) {
					c.Env = append(c.Env, e)
				}
			}
			mount := corev1.VolumeMount{Name: WorkloadIdentityTokenVolume, MountPath: WorkloadIdentityTokenDir, ReadOnly: true}
			if j := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == mount.Name }); j >= 0 {
				c.VolumeMounts[j] = mount
			} else {
				c.VolumeMounts = append(c.VolumeMounts, mount)
			}
		}
	}
	mutate(pod.Spec.InitContainers)
	mutate(pod.Spec.Containers)
	volume := corev1.Volume{Name: WorkloadIdentityTokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Path: path.Base(WorkloadIdentityTokenFile), ExpirationSeconds: ptr.To(expiration), Audience: WorkloadIdentityAudience,
		}}},
	}}}
	if j := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volume.Name }); j >= 0 {
		pod.Spec.Volumes[j] = volume
	} else {
		pod.Spec.Volumes = append(pod.Spec.Volumes, volume)
	}
	mutated, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	if req.DryRun == nil || !*req.DryRun {
		wh.mu.Lock()
		wh.mutated = append(wh.mutated, req.Namespace+"/"+name)
		wh.mu.Unlock()
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// tokenExpiration is the projected token's lifetime: the pod's annotation, else the service
// account's, else 3600 s; 3600 to 86400 s.
func tokenExpiration(pod *corev1.Pod, sa *corev1.ServiceAccount) (int64, error) {
	v := pod.Annotations[WorkloadIdentityTokenExpirationAnnotation]
	if v == "" {
		v = sa.Annotations[WorkloadIdentityTokenExpirationAnnotation]
	}
	if v == "" {
		return 3600, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 3600 || n > 86400 {
		return 0, fmt.Errorf("token expiration %q not valid: want 3600 to 86400 seconds", v)
	}
	return n, nil
}

// webhookCertificate makes a CA and a serving certificate for ip; it returns the certificate and
// the CA's PEM (the webhook configuration's caBundle).
func webhookCertificate(ip net.IP) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "workload identity webhook CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip.String()}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{ip}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// ServiceAccountIssuer returns the cluster's OIDC issuer and its JSON Web Key Set, as the API
// server publishes them (/.well-known/openid-configuration and its jwks_uri): what a federated
// credential names, and what Entra ID checks a service account token's signature with.
func (w *NodeWorld) ServiceAccountIssuer(ctx context.Context) (string, []byte, error) {
	hc, err := rest.HTTPClientFor(w.Config)
	if err != nil {
		return "", nil, err
	}
	get := func(p string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.APIServer+p, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s: %s", p, resp.Status, body)
		}
		return body, err
	}
	discovery, err := get("/.well-known/openid-configuration")
	if err != nil {
		return "", nil, err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(discovery, &doc); err != nil || doc.Issuer == "" || doc.JWKSURI == "" {
		return "", nil, errors.Join(err, fmt.Errorf("the API server's OIDC discovery document has no issuer or jwks_uri: %s", discovery))
	}
	jwksPath := doc.JWKSURI
	if i := strings.Index(jwksPath, "/openid/"); i >= 0 {
		jwksPath = jwksPath[i:] // served by the API server whatever host the URI names
	}
	jwks, err := get(jwksPath)
	return doc.Issuer, jwks, err
}
