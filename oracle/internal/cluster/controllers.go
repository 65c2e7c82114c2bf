package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// Controllers are the kube-controller-manager loops a test cluster runs: the workload controllers, PDB status
// (disruption), ownership (garbage collector), ServiceAccounts and their tokens, namespace deletion, node
// health (node lifecycle: it lifts the not-ready taint and reacts to stale leases) and orphaned-pod clean-up.
var Controllers = []string{
	"replicaset-controller", "deployment-controller", "statefulset-controller", "job-controller",
	"daemonset-controller", "disruption-controller", "garbage-collector-controller",
	"serviceaccount-controller", "serviceaccount-token-controller", "root-ca-certificate-publisher-controller",
	"namespace-controller", "node-lifecycle-controller", "pod-garbage-collector-controller",
}

// StartControllers runs kube-controller-manager in this process, configured through its own flags, without
// leader election or a serving port, against the cluster in kubeconfig. The channel yields Run's error.
func StartControllers(ctx context.Context, kubeconfig string, files Files) (<-chan error, error) {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager: %w", err)
	}
	all, disabled, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, set := range named.FlagSets {
		fs.AddFlagSet(set)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(Controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + files.ServiceAccountKey,
		"--root-ca-file=" + files.CACert,
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	s.ParsedFlags = &named
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, fmt.Errorf("kube-controller-manager: %w", err)
	}
	c, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, c.Complete()) }()
	return done, nil
}
