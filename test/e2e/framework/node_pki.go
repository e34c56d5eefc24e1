package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// clusterPKI is the node world's certificate authority and the files every component reads: as a
// kubeadm cluster has, minus what the test world does not need (front proxy, etcd TLS).
type clusterPKI struct {
	dir    string
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	// CA is the path of the CA certificate (the API server's client CA and the root CA pods trust).
	CA, CAKey string
	// ServingCert and ServingKey are the API server's: valid for the kubernetes Service's
	// names and ClusterIP, the node addresses and the loopback.
	ServingCert, ServingKey string
	// ServiceAccountKey and ServiceAccountPub sign and verify service account tokens.
	ServiceAccountKey, ServiceAccountPub string
	// FrontProxyCA signs the certificate the API server presents to aggregated API servers
	// (ProxyClientCert, ProxyClientKey), which they trust for the requesting user's identity.
	FrontProxyCA, ProxyClientCert, ProxyClientKey string
}

func newClusterPKI(dir string) (*clusterPKI, error) {
	p, err := newCA(dir, "service-router-node-world-ca")
	if err != nil {
		return nil, err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(KubernetesServiceIP), net.ParseIP(NodeIP(1)), net.ParseIP(NodeIP(2))}
	names := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if p.ServingCert, p.ServingKey, err = p.issue("apiserver", pkix.Name{CommonName: "kube-apiserver"}, names, ips, x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	p.ServiceAccountKey = filepath.Join(dir, "sa.key")
	if err := writePEM(p.ServiceAccountKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p.ServiceAccountPub = filepath.Join(dir, "sa.pub")
	if err := writePEM(p.ServiceAccountPub, "PUBLIC KEY", pub); err != nil {
		return nil, err
	}
	// The aggregation layer's own CA, apart from the cluster's as kubeadm keeps it: an aggregated
	// API server believes the user headers of whoever presents a certificate of this CA.
	front, err := newCA(filepath.Join(dir, "front-proxy"), "service-router-node-world-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	p.FrontProxyCA = front.CA
	p.ProxyClientCert, p.ProxyClientKey, err = front.clientCert("front-proxy-client", "front-proxy-client")
	return p, err
}

// newCA makes a certificate authority named cn whose files live in dir.
func newCA(dir, cn string) (*clusterPKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &clusterPKI{dir: dir}
	var err error
	if p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		return nil, err
	}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.CA, p.CAKey, err = p.writePair("ca", der, p.caKey)
	return p, err
}

// clientCert issues a client certificate for user in groups and returns its files.
func (p *clusterPKI) clientCert(name, user string, groups ...string) (cert, key string, err error) {
	return p.issue(name, pkix.Name{CommonName: user, Organization: groups}, nil, nil, x509.ExtKeyUsageClientAuth)
}

func (p *clusterPKI) issue(name string, subject pkix.Name, dnsNames []string, ips []net.IP, usage x509.ExtKeyUsage) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", err
	}
	return p.writePair(name, der, key)
}

func (p *clusterPKI) writePair(name string, der []byte, key *ecdsa.PrivateKey) (string, string, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	cert, keyPath := filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	if err := writePEM(cert, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	return cert, keyPath, writePEM(keyPath, "EC PRIVATE KEY", keyDER)
}

// kubeconfig writes a kubeconfig for the client certificate of user in groups, talking to server.
func (p *clusterPKI) kubeconfig(name, server, user string, groups ...string) (string, error) {
	cert, key, err := p.clientCert(name, user, groups...)
	if err != nil {
		return "", err
	}
	path := filepath.Join(p.dir, name+".kubeconfig")
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: node-world
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: node-world
  context:
    cluster: node-world
    user: %s
current-context: node-world
`, server, p.CA, name, cert, key, name)
	return path, os.WriteFile(path, []byte(content), 0o600)
}

func writePEM(path, blockType string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600)
}
