package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the credentials a test cluster runs with, all under its directory: a CA, the API server's serving
// certificate signed by it (for 127.0.0.1 and localhost), the ServiceAccount token signing key, and the static
// bearer token of the admin user (group system:masters).
type Files struct {
	CACert, ServingCert, ServingKey, ServiceAccountKey, TokenCSV string
	Token                                                        string
}

// WritePKI creates fresh credentials under dir/pki. Nothing is reused from an earlier cluster.
func WritePKI(dir string) (Files, error) {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return Files{}, err
	}
	f := Files{
		CACert:            filepath.Join(pki, "ca.crt"),
		ServingCert:       filepath.Join(pki, "apiserver.crt"),
		ServingKey:        filepath.Join(pki, "apiserver.key"),
		ServiceAccountKey: filepath.Join(pki, "sa.key"),
		TokenCSV:          filepath.Join(pki, "tokens.csv"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kplace-testcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return f, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return f, err
	}
	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	servingTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTmpl, ca, &servingKey.PublicKey, caKey)
	if err != nil {
		return f, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return f, err
	}
	sum := sha256.Sum256(secret)
	f.Token = hex.EncodeToString(sum[:16])
	writes := []struct {
		path string
		data []byte
	}{
		{f.CACert, pemBlock("CERTIFICATE", caDER)},
		{f.ServingCert, pemBlock("CERTIFICATE", servingDER)},
		{f.ServingKey, ecKeyPEM(servingKey)},
		{f.ServiceAccountKey, ecKeyPEM(saKey)},
		// token,user,uid,"group1,group2"
		{f.TokenCSV, []byte(fmt.Sprintf("%s,admin,admin,\"system:masters\"\n", f.Token))},
	}
	for _, w := range writes {
		if len(w.data) == 0 {
			return f, fmt.Errorf("%s: could not encode", w.path)
		}
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			return f, err
		}
	}
	return f, nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func ecKeyPEM(key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil
	}
	return pemBlock("EC PRIVATE KEY", der)
}
