// Package cluster runs a Kubernetes control plane for tests in one process, on 127.0.0.1: an embedded etcd, the
// real kube-apiserver and kube-controller-manager (linked from k8s.io/kubernetes, configured through their own
// flags), and simulated nodes whose pods turn Running without containers.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
)

// Options say how big the cluster is and how long starting it may take.
type Options struct {
	Dir          string
	Nodes        int
	Shape        NodeShape
	StartTimeout time.Duration
}

// Files under Options.Dir that callers rely on.
const (
	KubeconfigFile = "kubeconfig" // written once the cluster is usable, removed when it stops
	PIDFile        = "pid"
	LogFile        = "testcluster.log"
)

// Serve starts the cluster, writes Dir/kubeconfig once the API server answers, the controllers run and every
// node is Ready, untainted and has its Lease, then blocks until ctx is cancelled and stops everything in reverse
// order.
func Serve(ctx context.Context, o Options) error {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, KubeconfigFile)
	_ = os.Remove(kubeconfig)
	if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
		return err
	}
	files, err := WritePKI(dir)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	etcd, etcdURL, err := StartEtcd(dir, o.StartTimeout)
	if err != nil {
		return err
	}
	defer etcd.Close()

	apiCtx, stopAPI := context.WithCancel(context.Background())
	defer stopAPI()
	port, apiDone, err := StartAPIServer(apiCtx, dir, etcdURL, files)
	if err != nil {
		return err
	}
	// The components get their own copy, so that the caller's kubeconfig appears only when all is ready.
	internal := filepath.Join(dir, "pki", "admin.kubeconfig")
	if err := writeKubeconfig(internal, port, files); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", internal)
	if err != nil {
		return err
	}
	// client-go's default limit (5 requests/s, bursts of 10) is a kubelet's, for one node: the simulated kubelet
	// speaks for every node, so it gets a limit that covers a few hundred nodes' leases and pod updates.
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ready := func(what string, check func(context.Context) (bool, error)) error {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.StartTimeout, true,
			func(ctx context.Context) (bool, error) {
				select {
				case err := <-apiDone:
					return false, fmt.Errorf("kube-apiserver stopped: %w", err)
				default:
				}
				return check(ctx)
			})
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		klog.InfoS("testcluster: ready", "what", what)
		return nil
	}
	if err := ready("kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		status := 0
		client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		return status == 200, nil
	}); err != nil {
		return err
	}

	ctrlCtx, stopControllers := context.WithCancel(context.Background())
	defer stopControllers()
	if _, err := StartControllers(ctrlCtx, internal, files); err != nil {
		return err
	}
	kubelet := &Kubelet{Client: client, Shape: o.Shape, LeaseRenew: 10 * time.Second}
	go kubelet.Run(ctrlCtx)
	if err := kubelet.CreateNodes(ctx, o.Nodes); err != nil {
		return err
	}
	if err := ready("Ready, untainted nodes with leases", func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: SimulatedLabel + "=true"})
		if err != nil || len(nodes.Items) < o.Nodes {
			return false, nil
		}
		leases, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil || len(leases.Items) < len(nodes.Items) {
			return false, nil
		}
		for i := range nodes.Items {
			if !nodeReady(&nodes.Items[i]) || len(nodes.Items[i].Spec.Taints) > 0 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	if err := ready("the default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(corev1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return err
	}
	if err := writeKubeconfig(kubeconfig, port, files); err != nil {
		return err
	}
	defer os.Remove(kubeconfig)
	klog.InfoS("testcluster: serving", "kubeconfig", kubeconfig, "server", fmt.Sprintf("https://127.0.0.1:%d", port))

	select {
	case <-ctx.Done():
	case err := <-apiDone:
		return fmt.Errorf("kube-apiserver stopped: %w", err)
	}
	stopControllers()
	stopAPI()
	select {
	case err := <-apiDone:
		if err != nil && !errors.Is(err, context.Canceled) {
			klog.ErrorS(err, "testcluster: kube-apiserver shutdown")
		}
	case <-time.After(30 * time.Second):
		klog.InfoS("testcluster: kube-apiserver did not stop within 30s; stopping etcd anyway")
	}
	return nil
}

// writeKubeconfig writes, atomically, a kubeconfig for the admin token and the cluster's CA.
func writeKubeconfig(path string, port int, files Files) error {
	ca, err := os.ReadFile(files.CACert)
	if err != nil {
		return err
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["testcluster"] = &clientcmdapi.Cluster{
		Server: fmt.Sprintf("https://127.0.0.1:%d", port), CertificateAuthorityData: ca}
	config.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: files.Token}
	config.Contexts["testcluster"] = &clientcmdapi.Context{Cluster: "testcluster", AuthInfo: "admin"}
	config.CurrentContext = "testcluster"
	tmp := path + ".tmp"
	if err := clientcmd.WriteToFile(*config, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
