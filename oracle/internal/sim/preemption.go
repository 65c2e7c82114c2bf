package sim

import (
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
)

// WalkJSON is the candidate walk of kube's DefaultPreemption in one cycle: the potential nodes (those Filter
// rejected as Unschedulable) in the order kube listed them, and the random offset the walk started at. kube lists
// them in the iteration order of its node-status map, which Go randomizes, and draws the offset at random
// (`GetOffsetAndNumCandidates`): both are recorded as they came, not fixed.
type WalkJSON struct {
	Offset int32    `json:"offset"`
	Nodes  []string `json:"nodes"`
}

// offsetRecorder is DefaultPreemption's preemption.Interface (the plugin itself, embedded) with
// GetOffsetAndNumCandidates recording the offset kube drew into the capture of the pod in PostFilter.
type offsetRecorder struct {
	*defaultpreemption.DefaultPreemption
	o *Oracle
}

func (r *offsetRecorder) GetOffsetAndNumCandidates(n int32) (int32, int32) {
	offset, num := r.DefaultPreemption.GetOffsetAndNumCandidates(n)
	r.o.mu.Lock()
	c := r.o.postFilter
	r.o.mu.Unlock()
	if c != nil {
		c.mu.Lock()
		nodes := c.potential
		if int32(len(nodes)) != n { // not the list this walk goes over: report the count alone
			nodes = nil
		}
		c.walk = &WalkJSON{Offset: offset, Nodes: append([]string{}, nodes...)}
		c.mu.Unlock()
	}
	return offset, num
}

// statusRecorder is the node-status map passed to PostFilter, recording the nodes NodesForStatusCode lists for
// Unschedulable (DefaultPreemption's potential nodes) in the order it lists them.
type statusRecorder struct {
	fwk.NodeToStatusReader
	c *capture
}

func (s *statusRecorder) NodesForStatusCode(lister fwk.NodeInfoLister, code fwk.Code) ([]fwk.NodeInfo, error) {
	nodes, err := s.NodeToStatusReader.NodesForStatusCode(lister, code)
	if code == fwk.Unschedulable && err == nil {
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Node().Name
		}
		s.c.mu.Lock()
		s.c.potential = names
		s.c.mu.Unlock()
	}
	return nodes, err
}

// recordOffsets makes every profile's DefaultPreemption record its walks: the plugin instance is found among
// the framework's enqueue extensions (DefaultPreemption is a PreEnqueue plugin, and every instantiated one is
// there), and its Evaluator's Interface, the plugin itself, is replaced by an offsetRecorder embedding it.
func (o *Oracle) recordOffsets(exts []fwk.EnqueueExtensions) {
	for _, e := range exts {
		if dp, ok := e.(*defaultpreemption.DefaultPreemption); ok && dp.Evaluator != nil {
			dp.Evaluator.Interface = &offsetRecorder{DefaultPreemption: dp, o: o}
		}
	}
}
