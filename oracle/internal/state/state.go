// Package state loads cluster state files (kubectl -o json/yaml output) into
// typed Kubernetes objects, applying the API server's defaulting and the
// admission steps that matter to scheduling (pod priority).
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	// The legacy scheme carries the API server's v1 defaulting functions
	// (e.g. requests default to limits, allocatable defaults to capacity).
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
)

// Kinds that are loaded; everything else is ignored.
var loadedKinds = map[string]bool{
	"Node": true, "Pod": true, "PodDisruptionBudget": true, "PriorityClass": true,
	"Namespace": true, "PersistentVolume": true, "PersistentVolumeClaim": true,
	"StorageClass": true, "CSINode": true, "Service": true, "PodGroup": true,
}

// podGroupAPIVersion is the only PodGroup kube-scheduler reads (GenericWorkload); scheduler-plugins'
// scheduling.x-k8s.io PodGroups are ignored like any other unknown kind.
const podGroupAPIVersion = "scheduling.k8s.io/v1alpha2"

// namespaced are the loaded kinds that live in a namespace ("default" when a file leaves it out).
var namespaced = map[string]bool{"Pod": true, "PodDisruptionBudget": true, "PersistentVolumeClaim": true, "Service": true,
	"PodGroup": true}

// State is the merged content of all state files, in file order.
type State struct {
	Nodes []*v1.Node
	// Pods holds every non-finished pod in file order (bound and pending).
	Pods []*v1.Pod
	// Others holds the remaining objects (PDBs, PVs, PVCs, ...), in file order.
	Others []runtime.Object
	// PriorityClasses are also part of Others; kept here for resolution.
	PriorityClasses []*schedulingv1.PriorityClass
}

// Error names the file/object that could not be loaded.
type Error struct {
	File, Object string
	Err          error
}

func (e *Error) Error() string {
	if e.Object != "" {
		return fmt.Sprintf("%s: %s: %v", e.File, e.Object, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads and merges the given files in order.
func Load(files []string) (*State, error) {
	st := &State{}
	seen := map[string]string{}
	for _, f := range files {
		if err := st.loadFile(f, seen); err != nil {
			return nil, err
		}
	}
	if err := st.resolvePriorities(); err != nil {
		return nil, err
	}
	st.addEphemeralClaims()
	st.defaultStorageClass()
	return st, nil
}

type header struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func (st *State) loadFile(file string, seen map[string]string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return &Error{File: file, Err: err}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	n := 0
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return &Error{File: file, Err: fmt.Errorf("parse error: %w", err)}
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		n++
		if err := st.addDoc(file, raw, "", "", seen); err != nil {
			return err
		}
	}
	if n == 0 {
		return &Error{File: file, Err: errors.New("no objects found")}
	}
	return nil
}

func (st *State) addDoc(file string, raw []byte, defAPIVersion, defKind string, seen map[string]string) error {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return &Error{File: file, Err: fmt.Errorf("not a Kubernetes object: %w", err)}
	}
	if h.Kind == "" && defKind != "" {
		h.Kind, h.APIVersion = defKind, defAPIVersion
		// Items of typed lists (NodeList, PodList) may omit kind/apiVersion.
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return &Error{File: file, Err: err}
		}
		m["kind"], m["apiVersion"] = h.Kind, h.APIVersion
		raw, _ = json.Marshal(m)
	}
	if strings.HasSuffix(h.Kind, "List") {
		itemKind := strings.TrimSuffix(h.Kind, "List")
		if h.Kind == "List" {
			itemKind = ""
		}
		for _, it := range h.Items {
			if err := st.addDoc(file, it, h.APIVersion, itemKind, seen); err != nil {
				return err
			}
		}
		return nil
	}
	if h.Kind == "" {
		return &Error{File: file, Err: errors.New("object without kind")}
	}
	if !loadedKinds[h.Kind] || (h.Kind == "PodGroup" && h.APIVersion != podGroupAPIVersion) {
		return nil
	}
	if h.Metadata.Namespace == "" && namespaced[h.Kind] {
		h.Metadata.Namespace = "default" // as the API server does: `a` and `default/a` are one object
	}
	objName := h.Kind + " " + h.Metadata.Name
	if h.Metadata.Namespace != "" {
		objName = h.Kind + " " + h.Metadata.Namespace + "/" + h.Metadata.Name
	}
	if h.Metadata.Name == "" {
		return &Error{File: file, Object: h.Kind, Err: errors.New("metadata.name is empty")}
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return &Error{File: file, Object: objName, Err: err}
	}
	if prev, dup := seen[objName]; dup {
		return &Error{File: file, Object: objName, Err: fmt.Errorf("duplicate object (first defined in %s)", prev)}
	}
	seen[objName] = file
	// API server defaulting (v1 SetDefaults_*).
	legacyscheme.Scheme.Default(obj)
	if m := metaOf(obj); m != nil && namespaced[h.Kind] {
		m.SetNamespace(h.Metadata.Namespace)
	}
	normalize(obj)

	switch o := obj.(type) {
	case *v1.Node:
		st.Nodes = append(st.Nodes, o)
	case *v1.Pod:
		if o.Status.Phase == v1.PodSucceeded || o.Status.Phase == v1.PodFailed {
			return nil // finished pods are invisible to the scheduler
		}
		st.Pods = append(st.Pods, o)
	case *schedulingv1.PriorityClass:
		st.PriorityClasses = append(st.PriorityClasses, o)
		st.Others = append(st.Others, o)
	default:
		st.Others = append(st.Others, obj)
	}
	return nil
}

// normalize fills in what a real API server/controllers would have set.
func normalize(obj runtime.Object) {
	m := metaOf(obj)
	if m != nil && m.GetUID() == "" {
		ns := m.GetNamespace()
		if ns == "" {
			ns = "_"
		}
		m.SetUID(types.UID(fmt.Sprintf("oracle-%s-%s-%s", strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind), ns, m.GetName())))
	}
	switch o := obj.(type) {
	case *v1.PersistentVolumeClaim:
		// The PV controller marks bound claims with bind-completed; state
		// dumps of hand-written clusters may lack it.
		if o.Spec.VolumeName != "" {
			if o.Annotations == nil {
				o.Annotations = map[string]string{}
			}
			if _, ok := o.Annotations["pv.kubernetes.io/bind-completed"]; !ok {
				o.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
			}
			if o.Status.Phase == "" || o.Status.Phase == v1.ClaimPending {
				o.Status.Phase = v1.ClaimBound
			}
		}
	case *v1.Pod:
		if o.Spec.SchedulerName == "" {
			o.Spec.SchedulerName = v1.DefaultSchedulerName
		}
	}
}

func metaOf(obj runtime.Object) interface {
	GetNamespace() string
	SetNamespace(string)
	GetName() string
	GetUID() types.UID
	SetUID(types.UID)
} {
	if a, ok := obj.(interface {
		GetNamespace() string
		SetNamespace(string)
		GetName() string
		GetUID() types.UID
		SetUID(types.UID)
	}); ok {
		return a
	}
	return nil
}

// resolvePriorities emulates the Priority admission plugin: spec.priority
// from spec.priorityClassName, else the globalDefault class, else 0; and
// spec.preemptionPolicy from the class.
func (st *State) resolvePriorities() error {
	classes := map[string]*schedulingv1.PriorityClass{}
	var def *schedulingv1.PriorityClass
	for _, pc := range st.PriorityClasses {
		classes[pc.Name] = pc
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	for _, p := range st.Pods {
		var pc *schedulingv1.PriorityClass
		if p.Spec.PriorityClassName != "" {
			pc = classes[p.Spec.PriorityClassName]
			if pc == nil && p.Spec.Priority == nil {
				switch p.Spec.PriorityClassName {
				case "system-cluster-critical":
					pc = &schedulingv1.PriorityClass{Value: 2000000000}
				case "system-node-critical":
					pc = &schedulingv1.PriorityClass{Value: 2000001000}
				default:
					return &Error{File: "state", Object: "Pod " + p.Namespace + "/" + p.Name,
						Err: fmt.Errorf("no PriorityClass with name %q", p.Spec.PriorityClassName)}
				}
			}
		} else {
			pc = def
		}
		if p.Spec.Priority == nil {
			var v int32
			if pc != nil {
				v = pc.Value
			}
			p.Spec.Priority = &v
		}
		if p.Spec.PreemptionPolicy == nil {
			pol := v1.PreemptLowerPriority
			if pc != nil && pc.PreemptionPolicy != nil {
				pol = *pc.PreemptionPolicy
			}
			p.Spec.PreemptionPolicy = &pol
		}
	}
	return nil
}

// IsPending reports whether the pod still needs scheduling.
func IsPending(p *v1.Pod) bool { return p.Spec.NodeName == "" }

// PendingOrder returns the pending pods in kplace's queue order: priority
// desc, creationTimestamp asc (pods without one last), then file order.
func (st *State) PendingOrder() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range st.Pods {
		if IsPending(p) {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if *a.Spec.Priority != *b.Spec.Priority {
			return *a.Spec.Priority > *b.Spec.Priority
		}
		az, bz := a.CreationTimestamp.IsZero(), b.CreationTimestamp.IsZero()
		if az != bz {
			return !az
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
	return out
}

// addEphemeralClaims emulates the ephemeral volume controller: every pending
// pod's generic ephemeral volume gets its PVC "<pod>-<volume>", owned by the
// pod, unless the state already has it.
func (st *State) addEphemeralClaims() {
	have := map[string]bool{}
	for _, o := range st.Others {
		if c, ok := o.(*v1.PersistentVolumeClaim); ok {
			have[c.Namespace+"/"+c.Name] = true
		}
	}
	for _, p := range st.Pods {
		if !IsPending(p) {
			continue
		}
		for _, vol := range p.Spec.Volumes {
			if vol.Ephemeral == nil || vol.Ephemeral.VolumeClaimTemplate == nil {
				continue
			}
			name := p.Name + "-" + vol.Name
			if have[p.Namespace+"/"+name] {
				continue
			}
			tmpl := vol.Ephemeral.VolumeClaimTemplate
			isTrue := true
			pvc := &v1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: p.Namespace,
					Labels: tmpl.Labels, Annotations: tmpl.Annotations,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID,
						Controller: &isTrue, BlockOwnerDeletion: &isTrue}},
				},
				Spec: *tmpl.Spec.DeepCopy(),
			}
			pvc.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
			legacyscheme.Scheme.Default(pvc)
			normalize(pvc)
			st.Others = append(st.Others, pvc)
			have[p.Namespace+"/"+name] = true
		}
	}
}

// defaultStorageClass emulates the DefaultStorageClass admission plugin for
// claims without spec.storageClassName.
func (st *State) defaultStorageClass() {
	def := ""
	for _, o := range st.Others {
		if sc, ok := o.(*storagev1.StorageClass); ok && sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			def = sc.Name
		}
	}
	if def == "" {
		return
	}
	for _, o := range st.Others {
		if c, ok := o.(*v1.PersistentVolumeClaim); ok && c.Spec.StorageClassName == nil && c.Spec.VolumeName == "" {
			name := def
			c.Spec.StorageClassName = &name
		}
	}
}
