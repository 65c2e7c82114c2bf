package cluster

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// StartAPIServer runs kube-apiserver in this process, configured through its own command-line flags, on
// 127.0.0.1 at a free port. Clients authenticate with the static admin token (files.TokenCSV) or with
// ServiceAccount tokens signed by files.ServiceAccountKey; authorization is RBAC. The returned channel yields
// Run's error when the server stops (after ctx is cancelled, or on a failure).
func StartAPIServer(ctx context.Context, dir, etcdURL string, files Files) (int, <-chan error, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	port := listener.Addr().(*net.TCPAddr).Port
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range s.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + dir + "/pki",
		"--tls-cert-file=" + files.ServingCert,
		"--tls-private-key-file=" + files.ServingKey,
		"--token-auth-file=" + files.TokenCSV,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + files.ServiceAccountKey,
		"--service-account-signing-key-file=" + files.ServiceAccountKey,
		"--api-audiences=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/16",
		// The kubernetes Service would list 127.0.0.1 as its endpoint, which Endpoints validation rejects.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
	}
	if err := fs.Parse(args); err != nil {
		listener.Close()
		return 0, nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	s.SecureServing.Listener = listener
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return 0, nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return 0, nil, fmt.Errorf("kube-apiserver: %v", errs)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, completed) }()
	return port, done, nil
}
