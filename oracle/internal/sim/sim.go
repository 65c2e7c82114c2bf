// Package sim runs the real kube-scheduler (k8s.io/kubernetes/pkg/scheduler)
// against a fake clientset, one scheduling cycle at a time, and records what
// happened in each cycle.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	testingclock "k8s.io/utils/clock/testing"

	"kplace/oracle/internal/state"
)

// Options configures a run.
type Options struct {
	Config *config.KubeSchedulerConfiguration
	// Plan maps "ns/name" to the plan's node ("" = not placed); nil = no lockstep.
	Plan map[string]string
	// Parallelism overrides the configuration's parallelism (0 = keep).
	Parallelism int32
	Out         io.Writer
	// Timeout bounds every wait (informer sync, binding, preemption).
	Timeout time.Duration
	// NoRecord leaves the profiles' frameworks unwrapped: only the chosen node, the nomination, the victims and
	// the timings are reported (for measuring the scheduler's own speed).
	NoRecord bool
}

// Cycle is one line of output.
type Cycle struct {
	Cycle          int                         `json:"cycle"`
	Pod            string                      `json:"pod"`
	Attempt        int                         `json:"attempt"`   // this pod's cycles so far, this one included
	Rejectors      []string                    `json:"rejectors"` // a failed pod's UnschedulablePlugins ∪ PendingPlugins
	Profile        string                      `json:"profile"`
	Node           *string                     `json:"node"`
	Feasible       []string                    `json:"feasible"`
	Scores         map[string]int64            `json:"scores"`
	PluginScores   map[string]map[string]int64 `json:"plugin_scores"`
	Top            []string                    `json:"top"`
	Filters        map[string]*StatusJSON      `json:"filters"`
	Prefilter      *StatusJSON                 `json:"prefilter"`
	PrefilterNodes []string                    `json:"prefilter_nodes"`
	Hint           *string                     `json:"hint"`
	Evaluated      int                         `json:"evaluated"`
	Message        *string                     `json:"message"`
	Nominated      *string                     `json:"nominated"`
	Victims        []string                    `json:"victims"`
	PreemptionWalk *WalkJSON                   `json:"preemption_walk"` // nil: DefaultPreemption drew no offset
	Lockstep       bool                        `json:"lockstep"`
	Seconds        float64                     `json:"seconds"`          // the cycle's wall time, binding included
	ScheduleSecs   float64                     `json:"schedule_seconds"` // ScheduleOne: the scheduling cycle alone
}

// ConfigError reports that the scheduler could not be built from the
// configuration (unknown plugin, bad plugin args, ...).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return "invalid scheduler configuration: " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Oracle holds the scheduler under test.
type Oracle struct {
	opts   Options
	client *fake.Clientset
	sched  *scheduler.Scheduler

	mu sync.Mutex
	// caps are the captures of the current ScheduleOne by pod UID: one pod, or every pod of a pod group's cycle;
	// popped lists them in pop order, order in the order the algorithm reached them, cur is the pod it is at.
	caps   map[types.UID]*capture
	popped []*capture
	order  []*capture
	cur    *capture
	// preempting are the call's pods whose preemption announced victims, in PostFilter order: an eviction (made
	// asynchronously, maybe once the algorithm is at a later pod of the group) goes to the first still short of its.
	preempting []*capture
	// postFilter is the capture of the pod in RunPostFilterPlugins (DefaultPreemption records its walk there).
	postFilter *capture
	// groupRank is a pending pod's rank among its pod group's pods in creation order, firstTry its queue's
	// InitialAttemptTimestamp as kube set it (see track).
	groupRank map[types.UID]int
	firstTry  map[types.UID]time.Time
	// groupSeen is the number of pods bound or deleted when a pod group's last cycle ended, its own victims not counted.
	groupSeen map[string]uint64
	// clock is the scheduler's: frozen but for a microsecond per pod created and per cycle, so the batch is
	// decided at one instant (no backoff expires, no flush runs) and queue timestamps keep their order.
	clock *testingclock.FakeClock
	// attempts counts each pod's cycles; errored marks pods whose last cycle failed with an error (kube puts
	// them in its error backoff queue, which only a backoff flush empties: never in a frozen batch).
	attempts map[string]int
	errored  map[string]bool
	// events counts the pod events the scheduler's handlers must have finished (bindings seen, pods deleted)
	// before the next cycle starts, so every event of a cycle reaches the queue before the next pod is popped.
	// Pending pods added count too: a gang's last pod moves the others to activeQ in its handler, which must end
	// before the clock moves on, as their queue time is that instant. Nodes added count as well: kube's handler
	// fills the cache before it moves pods in the queue, so a node in the cache may still be an event in flight.
	events struct{ nodes, added, deleted, updated, pending uint64 }
	// version is the last resourceVersion written: the fake clientset keeps objects' own, and kube ignores an
	// update whose resourceVersion did not change, so every pod write here gets a new one as an API server's would.
	version int
}

// batchStart is the frozen clock's start: a whole second, so every first failure's backoff ends in one window.
var batchStart = time.Unix(1_767_225_600, 0)

func (o *Oracle) captureFor(p *v1.Pod) *capture {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.caps[p.UID]
}

// track starts the capture of a pod the queue handed out (NextPod, or PopSpecificPod for the other pods of a pod
// group). kube sorts a pod group's pods by priority, then InitialAttemptTimestamp; pods a single event moved to
// activeQ (a gang whose last pod arrived) share one, and kube leaves their order to map iteration. The oracle
// fixes it: their creation order, by adding each pod's rank in its group in nanoseconds (below the clock's
// microsecond step, so groups of fewer than 1,000 pods keep every other order).
func (o *Oracle) track(pi *framework.QueuedPodInfo) {
	key := pi.Pod.Namespace + "/" + pi.Pod.Name
	o.attempts[key]++
	c := newCapture(pi.Pod)
	c.attempt = o.attempts[key]
	if pi.Pod.Spec.SchedulingGroup != nil && pi.InitialAttemptTimestamp != nil {
		base, ok := o.firstTry[pi.Pod.UID]
		if !ok {
			base = *pi.InitialAttemptTimestamp
			o.firstTry[pi.Pod.UID] = base
		}
		t := base.Add(time.Duration(o.groupRank[pi.Pod.UID]))
		pi.InitialAttemptTimestamp = &t
	}
	o.mu.Lock()
	o.caps[pi.Pod.UID] = c
	o.popped = append(o.popped, c)
	o.mu.Unlock()
}

// groupQueue is the scheduler's queue with PopSpecificPod (a pod group's cycle taking its other pods) tracked.
type groupQueue struct {
	internalqueue.SchedulingQueue
	o *Oracle
}

func (q *groupQueue) PopSpecificPod(logger klog.Logger, pod *v1.Pod) *framework.QueuedPodInfo {
	pi := q.SchedulingQueue.PopSpecificPod(logger, pod)
	if pi != nil {
		q.o.track(pi)
	}
	return pi
}

func groupKey(p *v1.Pod) string {
	if p.Spec.SchedulingGroup == nil || p.Spec.SchedulingGroup.PodGroupName == nil {
		return ""
	}
	return p.Namespace + "/" + *p.Spec.SchedulingGroup.PodGroupName
}

// preemptor is the capture an eviction belongs to: the first pod of the call still short of the victims its
// preemption announced, else the pod the algorithm is at.
func (o *Oracle) preemptor() *capture {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.preempting {
		c.mu.Lock()
		short := len(c.victims) < int(c.expVictim+0.5)
		c.mu.Unlock()
		if short {
			return c
		}
	}
	return o.cur
}

func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Run loads the state into a fresh scheduler and schedules every pending pod once.
func Run(ctx context.Context, st *state.State, opts Options) error {
	if opts.Timeout == 0 {
		opts.Timeout = 60 * time.Second
	}
	o := &Oracle{opts: opts, clock: testingclock.NewFakeClock(batchStart), attempts: map[string]int{},
		errored: map[string]bool{}, caps: map[types.UID]*capture{}, groupRank: map[types.UID]int{},
		firstTry: map[types.UID]time.Time{}, groupSeen: map[string]uint64{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Objects whose order does not matter are present from the start.
	o.client = fake.NewSimpleClientset(st.Others...)
	o.installReactors()

	cfg := opts.Config
	par := cfg.Parallelism
	if opts.Parallelism > 0 {
		par = opts.Parallelism
	}
	factory := scheduler.NewInformerFactory(o.client, 0)
	recorder := func(string) events.EventRecorderLogger { return &events.FakeRecorder{} }
	sched, err := scheduler.New(ctx, o.client, factory, nil, profile.RecorderFactory(recorder),
		scheduler.WithComponentConfigVersion(cfg.APIVersion),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithParallelism(par),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithClock(o.clock),
	)
	if err != nil {
		return &ConfigError{Err: err}
	}
	o.sched = sched
	o.wrap()

	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return fmt.Errorf("waiting for handlers: %w", err)
	}

	pending, err := o.populate(ctx, st)
	if err != nil {
		return err
	}

	if err := o.waitForEvents(ctx); err != nil {
		return err
	}
	enc := json.NewEncoder(opts.Out)
	limit := 20*pending + 100
	i := 0
	for calls := 0; o.runnable(); calls++ {
		if calls >= limit {
			return fmt.Errorf("the batch did not settle after %d cycles", limit)
		}
		started := time.Now()
		caps, err := o.cycle(ctx)
		if err != nil {
			return err
		}
		seconds := time.Since(started).Seconds()
		for k, c := range caps { // a pod group's cycle: one line per pod; the first carries the call's time
			out := o.output(i, c)
			if k == 0 {
				out.Seconds = seconds
				out.ScheduleSecs = c.scheduling
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// runnable reports whether the queue would pop a pod now: one in activeQ, or (activeQ empty) one in backoffQ
// that did not fail with an error (kube pops from backoffQ when activeQ is empty, never from its error queue).
// A pod group's pods always go back to backoffQ, whatever the events (kube 1.36 has no event-based requeueing for
// pod groups yet), so an unschedulable group would come back forever: the oracle retries a group only when some
// pod was bound or deleted since its last cycle (its own preemption's victims included, its own pods bound not),
// as nothing else can change its result.
func (o *Oracle) runnable() bool {
	q := o.sched.SchedulingQueue
	if len(q.PodsInActiveQ()) > 0 {
		return true
	}
	o.mu.Lock()
	changes := o.events.added + o.events.deleted
	o.mu.Unlock()
	for _, p := range q.PodsInBackoffQ() {
		if o.errored[p.Namespace+"/"+p.Name] {
			continue
		}
		if seen, ok := o.groupSeen[groupKey(p)]; ok && o.workloads() && seen == changes {
			continue
		}
		return true
	}
	return false
}

// workloads reports whether pods of a pod group get a pod group cycle (GenericWorkload).
func (o *Oracle) workloads() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload)
}

// nodeAdd is the cluster event of kube's node-add handler (its latency metric's label).
var nodeAdd = fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}

// waitForEvents waits until the scheduler's handlers finished every binding and deletion seen so far (the
// scheduler's own event-handling histogram counts a handler when it returns).
func (o *Oracle) waitForEvents(ctx context.Context) error {
	count := func(label string) uint64 {
		n, err := testutil.GetHistogramMetricCount(schedmetrics.EventHandlingLatency.WithLabelValues(label))
		if err != nil {
			return 0
		}
		return n
	}
	return o.waitFor(ctx, "the scheduler's event handlers", func() bool {
		o.mu.Lock()
		want := o.events
		o.mu.Unlock()
		return count(nodeAdd.Label()) >= want.nodes &&
			count(framework.EventAssignedPodAdd.Label()) >= want.added &&
			count(framework.EventUnscheduledPodAdd.Label()) >= want.pending &&
			count(framework.EventAssignedPodDelete.Label()) >= want.deleted &&
			count(framework.EventUnscheduledPodUpdate.Label()) >= want.updated
	})
}

// wrap installs the recording wrappers around the profiles, SchedulePod,
// NextPod and FailureHandler.
func (o *Oracle) wrap() {
	s := o.sched
	for name, f := range s.Profiles {
		o.recordOffsets(f.EnqueueExtensions())
		pf := preemptionFramework{Framework: f, o: o}
		if o.opts.NoRecord {
			s.Profiles[name] = &pf
		} else {
			s.Profiles[name] = &recordingFramework{pf}
		}
	}

	s.SchedulingQueue = &groupQueue{SchedulingQueue: s.SchedulingQueue, o: o}
	nextPod := s.NextPod
	s.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		pi, err := nextPod(logger)
		if err != nil || pi == nil || pi.Pod == nil {
			return pi, err
		}
		o.mu.Lock()
		o.caps, o.popped, o.order, o.cur, o.preempting = map[types.UID]*capture{}, nil, nil, nil, nil
		o.mu.Unlock()
		o.track(pi)
		return pi, nil
	}

	schedulePod := s.SchedulePod
	s.SchedulePod = func(ctx context.Context, f framework.Framework, cs fwk.CycleState, pi *framework.QueuedPodInfo) (scheduler.ScheduleResult, error) {
		o.mu.Lock()
		if c := o.caps[pi.Pod.UID]; c != nil && c != o.cur {
			o.order = append(o.order, c)
			o.cur = c
		}
		o.mu.Unlock()
		res, err := schedulePod(ctx, f, cs, pi)
		c := o.captureFor(pi.Pod)
		if c == nil || err != nil {
			return res, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		r := res
		c.result = &r
		if o.opts.Plan != nil {
			if want := o.opts.Plan[c.key]; want != "" {
				for _, n := range c.top() {
					if n == want {
						res.SuggestedHost = want
						c.lockstep = true
						break
					}
				}
			}
		}
		return res, nil
	}

	failure := s.FailureHandler
	s.FailureHandler = func(ctx context.Context, f framework.Framework, pi *framework.QueuedPodInfo, st *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		if c := o.captureFor(pi.Pod); c != nil {
			c.mu.Lock()
			c.failMsg = st.Message() // what kube writes into the PodScheduled condition
			if ni.Mode() == fwk.ModeOverride {
				c.nominated = ni.NominatedNodeName
			}
			c.mu.Unlock()
		}
		// The FitError's plugins are what the queue files the pod under (read before the queue sees the pod: a
		// PreEnqueue plugin gating it later adds itself to the same set).
		var rejectors []string
		var fitErr *framework.FitError
		if errors.As(st.AsError(), &fitErr) {
			rejectors = sets.List(fitErr.Diagnosis.UnschedulablePlugins.Union(fitErr.Diagnosis.PendingPlugins))
		}
		failure(ctx, f, pi, st, ni, start)
		o.errored[pi.Pod.Namespace+"/"+pi.Pod.Name] = len(rejectors) == 0
		if c := o.captureFor(pi.Pod); c != nil {
			c.mu.Lock()
			c.failed = true
			c.rejectors = rejectors
			c.mu.Unlock()
		}
	}
}

// populate creates nodes, bound pods and pending pods through the client in a
// deterministic order, waiting for the scheduler to observe each one.
func (o *Oracle) populate(ctx context.Context, st *state.State) (int, error) {
	cs := o.client.CoreV1()
	for _, n := range st.Nodes {
		o.mu.Lock()
		o.events.nodes++
		o.mu.Unlock()
		if _, err := cs.Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("Node %s: %w", n.Name, err)
		}
		if err := o.waitForEvents(ctx); err != nil { // the handler's queue moves too, not only the cache
			return 0, err
		}
	}
	for _, p := range st.Pods {
		if !state.IsPending(p) {
			o.events.added++
			if err := o.createPod(ctx, p, func() bool {
				_, err := o.sched.Cache.GetPod(p)
				return err == nil
			}); err != nil {
				return 0, err
			}
		}
	}
	pending := 0
	inGroup := map[string]int{}
	for _, p := range st.PendingOrder() {
		if k := groupKey(p); k != "" {
			o.groupRank[p.UID] = inGroup[k]
			inGroup[k]++
		}
		if _, ok := o.sched.Profiles[p.Spec.SchedulerName]; !ok {
			fmt.Fprintf(os.Stderr, "kube-oracle: warning: pod %s/%s: no profile for schedulerName %q; not scheduled\n", p.Namespace, p.Name, p.Spec.SchedulerName)
			if _, err := cs.Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return 0, fmt.Errorf("Pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			continue
		}
		o.mu.Lock()
		o.events.pending++
		o.mu.Unlock()
		if err := o.createPod(ctx, p, func() bool {
			_, ok := o.sched.SchedulingQueue.GetPod(p.Name, p.Namespace)
			return ok
		}); err != nil {
			return 0, err
		}
		if err := o.waitForEvents(ctx); err != nil {
			return 0, err
		}
		if len(p.Spec.SchedulingGates) > 0 {
			fmt.Fprintf(os.Stderr, "kube-oracle: warning: pod %s/%s has scheduling gates; not scheduled\n", p.Namespace, p.Name)
			continue
		}
		pending++
	}
	return pending, nil
}

func (o *Oracle) createPod(ctx context.Context, p *v1.Pod, seen func() bool) error {
	o.clock.Step(time.Microsecond)
	if _, err := o.client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("Pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return o.waitFor(ctx, "pod "+p.Namespace+"/"+p.Name, seen)
}

// waitFor polls cond until it holds or the timeout expires.
func (o *Oracle) waitFor(ctx context.Context, what string, cond func() bool) error {
	deadline := time.Now().Add(o.opts.Timeout)
	sleep := 10 * time.Microsecond
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(sleep)
		if sleep < 50*time.Microsecond { // events arrive within tens of microseconds: do not oversleep them
			sleep *= 2
		}
	}
	return nil
}

// cycle runs one ScheduleOne and waits until its effects (bindings or failures, preemption victims' deletion)
// are visible to the scheduler. It returns the captures of the call: one pod's, or a pod group's in the order
// the algorithm reached them (pods it never reached last, in pop order).
func (o *Oracle) cycle(ctx context.Context) ([]*capture, error) {
	watchdog := time.AfterFunc(o.opts.Timeout, func() {
		if f, ok := o.opts.Out.(interface{ Flush() error }); ok {
			_ = f.Flush() // the cycles finished so far still reach stdout (the main goroutine is blocked)
		}
		fmt.Fprintln(os.Stderr, "kube-oracle: error: timed out waiting for a pod to schedule")
		os.Exit(1)
	})
	o.clock.Step(time.Microsecond)
	started := time.Now()
	o.sched.ScheduleOne(ctx)
	scheduling := time.Since(started).Seconds()
	watchdog.Stop()
	o.mu.Lock()
	caps := append([]*capture(nil), o.order...)
	for _, c := range o.popped {
		if !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	o.mu.Unlock()
	if len(caps) == 0 {
		return nil, fmt.Errorf("scheduling queue returned no pod")
	}
	caps[0].mu.Lock()
	caps[0].scheduling = scheduling
	caps[0].mu.Unlock()
	var deleted uint64
	for _, c := range caps {
		n, err := o.settle(ctx, c)
		if err != nil {
			return nil, err
		}
		deleted += n
	}
	o.mu.Lock()
	for _, c := range caps {
		c.mu.Lock()
		if c.bound != "" && !c.failed {
			o.events.added++
		}
		c.mu.Unlock()
	}
	seen := o.events.added + o.events.deleted // the group's own victims, deleted after its cycle, are news to it
	o.events.deleted += deleted
	o.mu.Unlock()
	for _, c := range caps {
		if k := groupKey(c.pod); k != "" {
			o.groupSeen[k] = seen
		}
	}
	if err := o.waitForEvents(ctx); err != nil {
		return nil, err
	}
	return caps, nil
}

// settle waits until one pod of the call is bound (confirmed in the cache) or failed, and its preemption's
// victims (async by default) are deleted and gone from the cache; it returns how many victims went.
func (o *Oracle) settle(ctx context.Context, c *capture) (uint64, error) {
	if err := o.waitFor(ctx, "binding of "+c.key, func() bool {
		c.mu.Lock()
		failed, bound := c.failed, c.bound
		c.mu.Unlock()
		if failed {
			return true
		}
		if bound == "" {
			return false
		}
		assumed, _ := o.sched.Cache.IsAssumedPod(c.pod)
		return !assumed
	}); err != nil {
		return 0, err
	}
	c.mu.Lock()
	exp := int(c.expVictim + 0.5)
	nom := c.postNom
	c.mu.Unlock()
	if nom != "" && exp > 0 {
		if err := o.waitFor(ctx, "preemption victims of "+c.key, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.victims) >= exp
		}); err != nil {
			return 0, err
		}
	}
	c.mu.Lock()
	victims := append([]*v1.Pod(nil), c.victimPod...)
	c.mu.Unlock()
	for _, v := range victims {
		if err := o.waitFor(ctx, "deletion of "+v.Namespace+"/"+v.Name, func() bool {
			_, err := o.sched.Cache.GetPod(v)
			return err != nil
		}); err != nil {
			return 0, err
		}
	}
	return uint64(len(victims)), nil
}

func (o *Oracle) output(i int, c *capture) *Cycle {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &Cycle{
		Cycle: i, Pod: c.key, Attempt: c.attempt, Rejectors: append([]string{}, c.rejectors...), Profile: c.prof,
		Feasible: []string{}, Scores: map[string]int64{}, PluginScores: map[string]map[string]int64{},
		Filters: c.filter, Prefilter: c.prefilter, PrefilterNodes: c.prefilterNodes,
		Hint: str(c.hint), Victims: append([]string{}, c.victims...), Lockstep: c.lockstep, PreemptionWalk: c.walk,
	}
	sort.Strings(out.Victims)
	switch {
	case c.scored:
		out.Feasible = c.scoreNodes
		for _, s := range c.scores {
			out.Scores[s.Name] = s.TotalScore
			ps := map[string]int64{}
			for _, p := range s.Scores {
				ps[p.Name] += p.Score
			}
			out.PluginScores[s.Name] = ps
		}
	case c.result != nil && c.result.FeasibleNodes <= 1:
		out.Feasible = []string{c.result.SuggestedHost}
	case c.result != nil:
		n := c.result.FeasibleNodes
		if n > len(c.passed) {
			n = len(c.passed)
		}
		out.Feasible = c.passed[:n]
	}
	out.Top = c.top()
	if c.result != nil {
		out.Evaluated = c.result.EvaluatedNodes
	} else {
		out.Evaluated = len(c.filter)
	}
	if c.failed {
		out.Message = &c.failMsg
		out.Nominated = str(c.nominated)
	} else {
		out.Node = str(c.bound)
	}
	return out
}

// installReactors makes the fake clientset behave enough like an API server
// (plus PV controller) for the scheduler: bindings, evictions, deletions and
// volume binding/provisioning.
func (o *Oracle) installReactors() {
	t := o.client.Tracker()
	o.client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		switch a.GetSubresource() {
		case "binding":
			b := ca.GetObject().(*v1.Binding)
			obj, err := t.Get(podsGVR, a.GetNamespace(), b.Name)
			if err != nil {
				return true, nil, err
			}
			p := obj.(*v1.Pod).DeepCopy()
			if p.Spec.NodeName != "" {
				return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), p.Name, fmt.Errorf("pod %s is already assigned to node %q", p.Name, p.Spec.NodeName))
			}
			p.Spec.NodeName = b.Target.Name
			o.newVersion(p)
			if err := t.Update(podsGVR, p, p.Namespace); err != nil {
				return true, nil, err
			}
			if c := o.captureFor(p); c != nil {
				c.mu.Lock()
				c.bound = b.Target.Name
				c.mu.Unlock()
			}
			return true, b, nil
		case "eviction":
			ev, ok := ca.GetObject().(interface{ GetName() string })
			if !ok {
				return false, nil, nil
			}
			o.recordVictim(a.GetNamespace(), ev.GetName())
			if err := t.Delete(podsGVR, a.GetNamespace(), ev.GetName()); err != nil {
				return true, nil, err
			}
			return true, ca.GetObject(), nil
		}
		return false, nil, nil
	})
	o.client.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchAction)
		if pa.GetPatchType() != types.StrategicMergePatchType {
			return false, nil, nil
		}
		obj, err := t.Get(podsGVR, a.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		old, err := json.Marshal(obj)
		if err != nil {
			return true, nil, err
		}
		merged, err := strategicpatch.StrategicMergePatch(old, pa.GetPatch(), &v1.Pod{})
		if err != nil {
			return true, nil, err
		}
		p := &v1.Pod{}
		if err := json.Unmarshal(merged, p); err != nil {
			return true, nil, err
		}
		o.newVersion(p)
		if err := t.Update(podsGVR, p, p.Namespace); err != nil {
			return true, nil, err
		}
		if p.Spec.NodeName == "" {
			o.mu.Lock()
			o.events.updated++ // the scheduler's handler for unscheduled pods sees it
			o.mu.Unlock()
		}
		return true, p, nil
	})
	o.client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		da := a.(clienttesting.DeleteAction)
		o.recordVictim(a.GetNamespace(), da.GetName())
		return false, nil, nil
	})
	o.installVolumeReactors()
}

// newVersion gives p the next resourceVersion.
func (o *Oracle) newVersion(p *v1.Pod) {
	o.mu.Lock()
	o.version++
	p.ResourceVersion = strconv.Itoa(o.version)
	o.mu.Unlock()
}

func (o *Oracle) recordVictim(ns, name string) {
	obj, err := o.client.Tracker().Get(podsGVR, ns, name)
	if err != nil {
		return
	}
	c := o.preemptor()
	if c == nil {
		return
	}
	c.mu.Lock()
	c.victims = append(c.victims, ns+"/"+name)
	c.victimPod = append(c.victimPod, obj.(*v1.Pod))
	c.mu.Unlock()
}
