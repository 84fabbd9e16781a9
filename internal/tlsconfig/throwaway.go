package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// Throwaway makes a certificate authority and one certificate it signs,
// valid for the given hosts (names or IP addresses) as both a server and
// a client, for `mezzo local --tls`: a TLS cluster on a laptop, mutual
// TLS included. It writes ca.pem, cert.pem and key.pem (0600) under dir
// and returns them as Files. The CA's key is not kept: nothing else can
// ever be signed by it.
func Throwaway(dir string, hosts []string, now time.Time, validity time.Duration) (Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
		return n
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "mezzo local throwaway CA " + now.UTC().Format(time.RFC3339)},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return Files{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Files{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "mezzo local"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return Files{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Files{}, err
	}
	f := Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem")}
	for _, w := range []struct {
		path, kind string
		der        []byte
		mode       os.FileMode
	}{
		{f.CA, "CERTIFICATE", caDER, 0o644},
		{f.Cert, "CERTIFICATE", leafDER, 0o644},
		{f.Key, "EC PRIVATE KEY", keyDER, 0o600},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: w.kind, Bytes: w.der})
		if err := os.WriteFile(w.path, data, w.mode); err != nil {
			return Files{}, fmt.Errorf("writing %s: %w", w.path, err)
		}
	}
	return f, nil
}
