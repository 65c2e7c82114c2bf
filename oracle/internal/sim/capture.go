package sim

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// StatusJSON is a filter/prefilter status in the output.
type StatusJSON struct {
	Code    string   `json:"code"`
	Plugin  string   `json:"plugin"`
	Reasons []string `json:"reasons"`
}

func statusJSON(s *fwk.Status) *StatusJSON {
	r := s.Reasons()
	if r == nil {
		r = []string{}
	}
	return &StatusJSON{Code: s.Code().String(), Plugin: s.Plugin(), Reasons: r}
}

// capture is everything recorded during the cycle of one pod.
type capture struct {
	mu         sync.Mutex
	uid        types.UID
	pod        *v1.Pod
	key        string
	prof       string
	scheduling float64 // seconds ScheduleOne took
	hint       string
	filter     map[string]*StatusJSON // failed nodes only
	passed     []string               // nodes that passed all filters, call order

	prefilter      *StatusJSON
	prefilterNodes []string

	scored     bool
	scoreNodes []string
	scores     []fwk.NodePluginScores

	result    *scheduler.ScheduleResult // kube's own result (before a lockstep override); nil unless it succeeded
	lockstep  bool
	postNom   string    // nominated node from PostFilter
	expVictim float64   // victims announced by preemption (metric delta)
	potential []string  // the nodes NodesForStatusCode listed as Unschedulable in PostFilter, in its order
	walk      *WalkJSON // DefaultPreemption's candidate walk: potential nodes and the offset kube drew

	attempt   int      // the pod's cycles so far, this one included
	rejectors []string // UnschedulablePlugins ∪ PendingPlugins after a failure

	failed    bool
	failMsg   string
	nominated string
	bound     string // node from the binding reactor
	victims   []string
	victimPod []*v1.Pod
}

func newCapture(p *v1.Pod) *capture {
	return &capture{uid: p.UID, pod: p, key: p.Namespace + "/" + p.Name, prof: p.Spec.SchedulerName,
		filter: map[string]*StatusJSON{}}
}

// top returns the nodes with the maximum total score, in scoring order.
func (c *capture) top() []string {
	out := []string{}
	if !c.scored {
		if c.result != nil {
			out = append(out, c.result.SuggestedHost)
		}
		return out
	}
	var best int64
	for i, s := range c.scores {
		if i == 0 || s.TotalScore > best {
			best = s.TotalScore
		}
	}
	for _, s := range c.scores {
		if s.TotalScore == best {
			out = append(out, s.Name)
		}
	}
	return out
}

// preemptionFramework wraps a profile's framework to learn what PostFilter
// (preemption) nominated and how many victims it announced, so that a cycle
// waits for their deletion before the next starts, and which nodes its
// candidate walk went over from which offset. It is always installed.
type preemptionFramework struct {
	framework.Framework
	o *Oracle
}

// recordingFramework also records the scheduling cycle of the pod currently
// being scheduled (not with --no-record). Preemption's dry runs go through the
// plugin's own handle (the unwrapped framework) and are not seen.
type recordingFramework struct {
	preemptionFramework
}

func (f *recordingFramework) RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string]) {
	res, st, plugins := f.Framework.RunPreFilterPlugins(ctx, state, pod)
	if c := f.o.captureFor(pod); c != nil {
		c.mu.Lock()
		if !st.IsSuccess() {
			c.prefilter = statusJSON(st)
		}
		if res != nil && !res.AllNodes() {
			c.prefilterNodes = sets.List(res.NodeNames)
		}
		c.mu.Unlock()
	}
	return res, st, plugins
}

func (f *recordingFramework) GetNodeHint(ctx context.Context, pod *v1.Pod, sig fwk.PodSignature, state fwk.CycleState, cycle int64) string {
	h := f.Framework.GetNodeHint(ctx, pod, sig, state, cycle)
	if c := f.o.captureFor(pod); c != nil {
		c.mu.Lock()
		c.hint = h
		c.mu.Unlock()
	}
	return h
}

func (f *recordingFramework) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) *fwk.Status {
	st := f.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, info)
	if c := f.o.captureFor(pod); c != nil {
		name := info.Node().Name
		c.mu.Lock()
		if st.IsSuccess() {
			delete(c.filter, name)
			c.passed = append(c.passed, name)
		} else {
			c.filter[name] = statusJSON(st)
		}
		c.mu.Unlock()
	}
	return st
}

func (f *recordingFramework) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	scores, st := f.Framework.RunScorePlugins(ctx, state, pod, nodes)
	if c := f.o.captureFor(pod); c != nil {
		c.mu.Lock()
		c.scored = true
		c.scoreNodes = make([]string, len(nodes))
		for i, n := range nodes {
			c.scoreNodes[i] = n.Node().Name
		}
		c.scores = append([]fwk.NodePluginScores(nil), scores...)
		c.mu.Unlock()
	}
	return scores, st
}

func (f *preemptionFramework) RunPostFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	before, _ := testutil.GetHistogramMetricValue(metrics.PreemptionVictims.ObserverMetric)
	c := f.o.captureFor(pod)
	if c != nil {
		m = &statusRecorder{NodeToStatusReader: m, c: c}
	}
	f.o.mu.Lock()
	f.o.postFilter = c
	f.o.mu.Unlock()
	res, st := f.Framework.RunPostFilterPlugins(ctx, state, pod, m)
	f.o.mu.Lock()
	f.o.postFilter = nil
	f.o.mu.Unlock()
	after, _ := testutil.GetHistogramMetricValue(metrics.PreemptionVictims.ObserverMetric)
	if c != nil {
		c.mu.Lock()
		if st.IsSuccess() && res != nil && res.NominatingInfo != nil {
			c.postNom = res.NominatedNodeName
		}
		c.expVictim = after - before
		preempts := c.postNom != "" && c.expVictim > 0
		c.mu.Unlock()
		if preempts {
			f.o.mu.Lock()
			f.o.preempting = append(f.o.preempting, c)
			f.o.mu.Unlock()
		}
	}
	return res, st
}
