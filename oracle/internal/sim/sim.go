// Package sim runs the real kube-scheduler (k8s.io/kubernetes/pkg/scheduler)
// against a fake clientset, one scheduling cycle at a time, and records what
// happened in each cycle.
package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"

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

	mu  sync.Mutex
	cur *capture
	// attempted holds pods that already had their cycle.
	attempted map[string]bool
}

func (o *Oracle) captureFor(p *v1.Pod) *capture {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur != nil && o.cur.uid == p.UID {
		return o.cur
	}
	return nil
}

func (o *Oracle) current() *capture {
	o.mu.Lock()
	defer o.mu.Unlock()
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
	o := &Oracle{opts: opts, attempted: map[string]bool{}}
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

	enc := json.NewEncoder(opts.Out)
	for i := 0; i < pending; i++ {
		started := time.Now()
		c, err := o.cycle(ctx)
		if err != nil {
			return err
		}
		seconds := time.Since(started).Seconds()
		out := o.output(i, c)
		out.Seconds = seconds
		out.ScheduleSecs = c.scheduling
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	return nil
}

// wrap installs the recording wrappers around the profiles, SchedulePod,
// NextPod and FailureHandler.
func (o *Oracle) wrap() {
	s := o.sched
	for name, f := range s.Profiles {
		pf := preemptionFramework{Framework: f, o: o}
		if o.opts.NoRecord {
			s.Profiles[name] = &pf
		} else {
			s.Profiles[name] = &recordingFramework{pf}
		}
	}

	nextPod := s.NextPod
	s.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		for {
			pi, err := nextPod(logger)
			if err != nil || pi == nil || pi.Pod == nil {
				return pi, err
			}
			key := pi.Pod.Namespace + "/" + pi.Pod.Name
			if o.attempted[key] {
				// One cycle per pod: a pod requeued by cluster events is dropped.
				s.SchedulingQueue.Done(pi.Pod.UID)
				continue
			}
			o.attempted[key] = true
			o.mu.Lock()
			o.cur = newCapture(pi.Pod)
			o.mu.Unlock()
			return pi, nil
		}
	}

	schedulePod := s.SchedulePod
	s.SchedulePod = func(ctx context.Context, f framework.Framework, cs fwk.CycleState, pi *framework.QueuedPodInfo) (scheduler.ScheduleResult, error) {
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
			if err := st.AsError(); err != nil {
				c.failMsg = err.Error()
			} else {
				c.failMsg = st.Message()
			}
			if ni.Mode() == fwk.ModeOverride {
				c.nominated = ni.NominatedNodeName
			}
			c.mu.Unlock()
		}
		failure(ctx, f, pi, st, ni, start)
		if c := o.captureFor(pi.Pod); c != nil {
			c.mu.Lock()
			c.failed = true
			c.mu.Unlock()
		}
	}
}

// populate creates nodes, bound pods and pending pods through the client in a
// deterministic order, waiting for the scheduler to observe each one.
func (o *Oracle) populate(ctx context.Context, st *state.State) (int, error) {
	cs := o.client.CoreV1()
	for _, n := range st.Nodes {
		if _, err := cs.Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("Node %s: %w", n.Name, err)
		}
		name := n.Name
		if err := o.waitFor(ctx, "node "+name, func() bool {
			ni, err := o.sched.Cache.GetNode(name)
			return err == nil && ni.Node() != nil
		}); err != nil {
			return 0, err
		}
	}
	for _, p := range st.Pods {
		if !state.IsPending(p) {
			if err := o.createPod(ctx, p, func() bool {
				_, err := o.sched.Cache.GetPod(p)
				return err == nil
			}); err != nil {
				return 0, err
			}
		}
	}
	pending := 0
	for _, p := range st.PendingOrder() {
		if _, ok := o.sched.Profiles[p.Spec.SchedulerName]; !ok {
			fmt.Fprintf(os.Stderr, "kube-oracle: warning: pod %s/%s: no profile for schedulerName %q; not scheduled\n", p.Namespace, p.Name, p.Spec.SchedulerName)
			if _, err := cs.Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return 0, fmt.Errorf("Pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			continue
		}
		if err := o.createPod(ctx, p, func() bool {
			_, ok := o.sched.SchedulingQueue.GetPod(p.Name, p.Namespace)
			return ok
		}); err != nil {
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

// cycle runs one ScheduleOne and waits until its effects (binding or
// failure, preemption victims' deletion) are visible to the scheduler.
func (o *Oracle) cycle(ctx context.Context) (*capture, error) {
	watchdog := time.AfterFunc(o.opts.Timeout, func() {
		if f, ok := o.opts.Out.(interface{ Flush() error }); ok {
			_ = f.Flush() // the cycles finished so far still reach stdout (the main goroutine is blocked)
		}
		fmt.Fprintln(os.Stderr, "kube-oracle: error: timed out waiting for a pod to schedule")
		os.Exit(1)
	})
	started := time.Now()
	o.sched.ScheduleOne(ctx)
	scheduling := time.Since(started).Seconds()
	watchdog.Stop()
	c := o.current()
	if c == nil {
		return nil, fmt.Errorf("scheduling queue returned no pod")
	}
	c.mu.Lock()
	c.scheduling = scheduling
	c.mu.Unlock()
	// Binding runs asynchronously: wait for the bind (confirmed in the cache)
	// or for the failure handler.
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
		return nil, err
	}
	// Preemption (async by default) deletes victims in the background.
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
			return nil, err
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
			return nil, err
		}
	}
	return c, nil
}

func (o *Oracle) output(i int, c *capture) *Cycle {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &Cycle{
		Cycle: i, Pod: c.key, Profile: c.prof,
		Feasible: []string{}, Scores: map[string]int64{}, PluginScores: map[string]map[string]int64{},
		Filters: c.filter, Prefilter: c.prefilter, PrefilterNodes: c.prefilterNodes,
		Hint: str(c.hint), Victims: append([]string{}, c.victims...), Lockstep: c.lockstep,
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
	o.client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		da := a.(clienttesting.DeleteAction)
		o.recordVictim(a.GetNamespace(), da.GetName())
		return false, nil, nil
	})
	o.installVolumeReactors()
}

func (o *Oracle) recordVictim(ns, name string) {
	obj, err := o.client.Tracker().Get(podsGVR, ns, name)
	if err != nil {
		return
	}
	c := o.current()
	if c == nil {
		return
	}
	c.mu.Lock()
	c.victims = append(c.victims, ns+"/"+name)
	c.victimPod = append(c.victimPod, obj.(*v1.Pod))
	c.mu.Unlock()
}
