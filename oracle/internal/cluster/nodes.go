package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// SimulatedLabel marks the nodes the simulated kubelet manages; a test adds a node to the cluster by creating a
// Node with this label (capacity and status are filled in when it has none).
const SimulatedLabel = "testcluster.kplace.io/simulated"

// NodeShape is the capacity every simulated node is given unless its object says otherwise.
type NodeShape struct {
	CPU, Memory, Pods string
}

// StatusReport is how often an unchanged Ready condition is reported again (kubelet's nodeStatusReportFrequency,
// 5 minutes): between reports, the Lease alone tells the node-lifecycle controller that the node is alive.
const StatusReport = 5 * time.Minute

// Kubelet stands in for the kubelets of the simulated nodes, with no containers: it keeps each node Ready (a
// kube-node-lease Lease renewed every LeaseRenew, the Ready condition's heartbeat every StatusReport), turns the
// pods bound to it Running and Ready, and finishes their graceful deletion at once, as a kubelet does once the
// containers are gone.
type Kubelet struct {
	Client     kubernetes.Interface
	Shape      NodeShape
	LeaseRenew time.Duration

	nodes  corelisters.NodeLister
	pods   corelisters.PodLister
	queue  workqueue.TypedRateLimitingInterface[string]
	mu     sync.Mutex
	ips    map[string]string // pod UID → its IP
	leases map[string]bool   // the nodes whose Lease was created
	next   int
}

// CreateNodes creates n simulated nodes node-0 … node-(n-1), spread round-robin over three zones.
func (k *Kubelet) CreateNodes(ctx context.Context, n int) error {
	zones := []string{"zone-a", "zone-b", "zone-c"}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			SimulatedLabel:                     "true",
			corev1.LabelHostname:               name,
			corev1.LabelOSStable:               "linux",
			corev1.LabelArchStable:             "amd64",
			corev1.LabelTopologyZone:           zones[i%len(zones)],
			corev1.LabelTopologyRegion:         "region-1",
			"node.kubernetes.io/instance-type": "sim",
		}}}
		if _, err := k.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("node %s: %w", name, err)
		}
	}
	return nil
}

// Run watches nodes and pods until ctx is done.
func (k *Kubelet) Run(ctx context.Context) {
	k.ips, k.leases = map[string]string{}, map[string]bool{}
	k.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(k.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = SimulatedLabel + "=true" }))
	podFactory := informers.NewSharedInformerFactory(k.Client, 0)
	nodeInformer := nodeFactory.Core().V1().Nodes()
	podInformer := podFactory.Core().V1().Pods()
	k.nodes, k.pods = nodeInformer.Lister(), podInformer.Lister()
	enqueueNode := func(obj any) {
		if node, ok := obj.(*corev1.Node); ok {
			k.queue.Add("node/" + node.Name)
		}
	}
	_, _ = nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNode,
		UpdateFunc: func(_, obj any) { enqueueNode(obj) },
	})
	enqueuePod := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			k.queue.Add("pod/" + pod.Namespace + "/" + pod.Name)
		}
	}
	_, _ = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueuePod,
		UpdateFunc: func(_, obj any) { enqueuePod(obj) },
		DeleteFunc: k.forget,
	})
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	nodeFactory.WaitForCacheSync(ctx.Done())
	podFactory.WaitForCacheSync(ctx.Done())
	for i := 0; i < 4; i++ {
		go wait.UntilWithContext(ctx, k.work, time.Second)
	}
	go wait.UntilWithContext(ctx, k.heartbeat, k.LeaseRenew)
	<-ctx.Done()
	k.queue.ShutDown()
}

func (k *Kubelet) work(ctx context.Context) {
	for {
		key, quit := k.queue.Get()
		if quit {
			return
		}
		var err error
		switch {
		case len(key) > 5 && key[:5] == "node/":
			err = k.syncNode(ctx, key[5:])
		case len(key) > 4 && key[:4] == "pod/":
			err = k.syncPod(ctx, key[4:])
		}
		if err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("simulated kubelet: retrying", "key", key, "err", err)
			k.queue.AddRateLimited(key)
		} else {
			k.queue.Forget(key)
		}
		k.queue.Done(key)
	}
}

// syncNode creates a new node's Lease, gives a node without capacity the default shape, and a node that is not
// Ready its Ready status.
func (k *Kubelet) syncNode(ctx context.Context, name string) error {
	node, err := k.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !k.leased(node.Name) {
		if err := k.renewLease(ctx, node); err != nil {
			return err
		}
		k.mu.Lock()
		k.leases[node.Name] = true
		k.mu.Unlock()
	}
	if len(node.Status.Capacity) > 0 && nodeReady(node) {
		return nil
	}
	node = node.DeepCopy()
	if len(node.Status.Capacity) == 0 {
		node.Status.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse(k.Shape.CPU),
			corev1.ResourceMemory:           resource.MustParse(k.Shape.Memory),
			corev1.ResourcePods:             resource.MustParse(k.Shape.Pods),
			corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		}
	}
	if len(node.Status.Allocatable) == 0 {
		node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	}
	setNodeConditions(node, metav1.Now())
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: node.Name}}
	node.Status.NodeInfo.KubeletVersion = "v1.36.3"
	node.Status.NodeInfo.OperatingSystem = "linux"
	node.Status.NodeInfo.Architecture = "amd64"
	node.Status.NodeInfo.ContainerRuntimeVersion = "simulated://0"
	_, err = k.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

func (k *Kubelet) leased(node string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.leases[node]
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setNodeConditions reports the node Ready and under no pressure, heartbeat now.
func setNodeConditions(node *corev1.Node, now metav1.Time) {
	want := map[corev1.NodeConditionType]corev1.ConditionStatus{
		corev1.NodeReady: corev1.ConditionTrue, corev1.NodeMemoryPressure: corev1.ConditionFalse,
		corev1.NodeDiskPressure: corev1.ConditionFalse, corev1.NodePIDPressure: corev1.ConditionFalse,
		corev1.NodeNetworkUnavailable: corev1.ConditionFalse,
	}
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if status, ok := want[c.Type]; ok {
			if c.Status != status {
				c.LastTransitionTime = now
			}
			c.Status, c.LastHeartbeatTime, c.Reason = status, now, "Simulated"
			delete(want, c.Type)
		}
	}
	for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure,
		corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		if status, ok := want[t]; ok {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: t, Status: status,
				LastHeartbeatTime: now, LastTransitionTime: now, Reason: "Simulated"})
		}
	}
}

// heartbeat renews every simulated node's Lease, and refreshes its Ready condition when the last report is
// StatusReport old (or the node is not Ready), as a kubelet does: a status write per node every 10 s would make
// every node watcher (the schedulers among them) read each node's whole object again and again.
func (k *Kubelet) heartbeat(ctx context.Context) {
	nodes, err := k.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	for _, node := range nodes {
		if err := k.renewLease(ctx, node); err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("simulated kubelet: lease", "node", node.Name, "err", err)
		}
		if nodeReady(node) && time.Since(readyHeartbeat(node)) < StatusReport-k.LeaseRenew/2 {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fresh, err := k.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			setNodeConditions(fresh, metav1.Now())
			_, err = k.Client.CoreV1().Nodes().UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			klog.V(2).InfoS("simulated kubelet: node status", "node", node.Name, "err", err)
		}
	}
}

// readyHeartbeat is the Ready condition's last heartbeat (the zero time without one).
func readyHeartbeat(node *corev1.Node) time.Time {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

func (k *Kubelet) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := k.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &now},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// syncPod finishes a terminating pod's deletion, and turns a pod bound to a simulated node Running and Ready.
func (k *Kubelet) syncPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := k.nodes.Get(pod.Spec.NodeName); err != nil {
		return nil // not a simulated node's pod
	}
	if pod.DeletionTimestamp != nil {
		err := k.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if pod.Status.Phase != corev1.PodPending {
		return nil
	}
	pod = pod.DeepCopy()
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.HostIP = "10.0.0.1"
	pod.Status.PodIP = k.podIP(pod)
	pod.Status.PodIPs = []corev1.PodIP{{IP: pod.Status.PodIP}}
	pod.Status.StartTime = &now
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReadyToStartContainers,
		corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		setPodCondition(pod, t, now)
	}
	pod.Status.InitContainerStatuses = nil
	pod.Status.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "simulated://" + c.Image, ContainerID: "simulated://" + c.Name,
			Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err = k.Client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func setPodCondition(pod *corev1.Pod, t corev1.PodConditionType, now metav1.Time) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			if pod.Status.Conditions[i].Status != corev1.ConditionTrue {
				pod.Status.Conditions[i].Status = corev1.ConditionTrue
				pod.Status.Conditions[i].LastTransitionTime = now
				pod.Status.Conditions[i].Reason, pod.Status.Conditions[i].Message = "", ""
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions,
		corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
}

// forget drops a deleted pod's IP.
func (k *Kubelet) forget(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		k.mu.Lock()
		delete(k.ips, string(pod.UID))
		k.mu.Unlock()
	}
}

// podIP gives each pod its own address in 10.244.0.0/16, stable while the process runs.
func (k *Kubelet) podIP(pod *corev1.Pod) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ip, ok := k.ips[string(pod.UID)]; ok {
		return ip
	}
	k.next++
	ip := fmt.Sprintf("10.244.%d.%d", (k.next/250)%256, k.next%250+1)
	k.ips[string(pod.UID)] = ip
	return ip
}
