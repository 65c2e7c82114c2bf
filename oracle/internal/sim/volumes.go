package sim

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/storage/volume"
)

var (
	podsGVR = v1.SchemeGroupVersion.WithResource("pods")
	pvGVR   = v1.SchemeGroupVersion.WithResource("persistentvolumes")
	pvcGVR  = v1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	scGVR   = storagev1.SchemeGroupVersion.WithResource("storageclasses")
	csiGVR  = storagev1.SchemeGroupVersion.WithResource("csinodes")
	nodeGVR = v1.SchemeGroupVersion.WithResource("nodes")
)

// installVolumeReactors emulates the PV controller and a dynamic provisioner,
// which the VolumeBinding plugin's PreBind waits for:
//   - a PV updated with a claimRef (static binding) gets its claim bound;
//   - a claim annotated with selected-node (WaitForFirstConsumer provisioning)
//     gets a new PV ("pvc-<uid>") provisioned and bound.
func (o *Oracle) installVolumeReactors() {
	t := o.client.Tracker()
	o.client.PrependReactor("update", "persistentvolumes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		pv := a.(clienttesting.UpdateAction).GetObject().(*v1.PersistentVolume).DeepCopy()
		ref := pv.Spec.ClaimRef
		if ref == nil {
			return false, nil, nil
		}
		obj, err := t.Get(pvcGVR, ref.Namespace, ref.Name)
		if err != nil {
			return false, nil, nil
		}
		pvc := obj.(*v1.PersistentVolumeClaim).DeepCopy()
		if pvc.Spec.VolumeName != "" && pvc.Spec.VolumeName != pv.Name {
			return false, nil, nil
		}
		pv.Status.Phase = v1.VolumeBound
		if err := t.Update(pvGVR, pv, ""); err != nil {
			return true, nil, err
		}
		return true, pv, bindClaim(t, pvc, pv)
	})
	o.client.PrependReactor("update", "persistentvolumeclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		pvc := a.(clienttesting.UpdateAction).GetObject().(*v1.PersistentVolumeClaim).DeepCopy()
		nodeName := pvc.Annotations[volume.AnnSelectedNode]
		if nodeName == "" || pvc.Spec.VolumeName != "" || pvc.Spec.StorageClassName == nil {
			return false, nil, nil
		}
		obj, err := t.Get(scGVR, "", *pvc.Spec.StorageClassName)
		if err != nil {
			return false, nil, nil
		}
		sc := obj.(*storagev1.StorageClass)
		if sc.Provisioner == "kubernetes.io/no-provisioner" {
			return false, nil, nil
		}
		pv := provision(t, pvc, sc, nodeName)
		if err := t.Create(pvGVR, pv, ""); err != nil {
			return true, nil, err
		}
		return true, pvc, bindClaim(t, pvc, pv)
	})
}

// bindClaim binds the claim to the PV in the tracker, as the PV controller does.
func bindClaim(t clienttesting.ObjectTracker, pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) error {
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[volume.AnnBindCompleted] = "yes"
	pvc.Annotations[volume.AnnBoundByController] = "yes"
	pvc.Spec.VolumeName = pv.Name
	pvc.Status.Phase = v1.ClaimBound
	pvc.Status.AccessModes = pv.Spec.AccessModes
	pvc.Status.Capacity = pv.Spec.Capacity
	return t.Update(pvcGVR, pvc, pvc.Namespace)
}

// provision builds the PV a CSI external-provisioner would create: CSI
// source for the class's driver, capacity = request, and node affinity on
// the driver's topology keys (from the selected node's CSINode).
func provision(t clienttesting.ObjectTracker, pvc *v1.PersistentVolumeClaim, sc *storagev1.StorageClass, nodeName string) *v1.PersistentVolume {
	policy := v1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		policy = *sc.ReclaimPolicy
	}
	name := "pvc-" + string(pvc.UID)
	pv := &v1.PersistentVolume{}
	pv.Name = name
	pv.UID = types.UID("oracle-pv-" + name)
	pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": sc.Provisioner}
	pv.Spec = v1.PersistentVolumeSpec{
		Capacity:                      v1.ResourceList{v1.ResourceStorage: pvc.Spec.Resources.Requests[v1.ResourceStorage]},
		AccessModes:                   pvc.Spec.AccessModes,
		StorageClassName:              sc.Name,
		PersistentVolumeReclaimPolicy: policy,
		VolumeMode:                    pvc.Spec.VolumeMode,
		MountOptions:                  sc.MountOptions,
		ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
			Driver: sc.Provisioner, VolumeHandle: name}},
	}
	pv.Status.Phase = v1.VolumeBound
	if terms := topology(t, sc.Provisioner, nodeName); terms != nil {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: terms}}
	}
	return pv
}

func topology(t clienttesting.ObjectTracker, driver, nodeName string) []v1.NodeSelectorTerm {
	cobj, err := t.Get(csiGVR, "", nodeName)
	if err != nil {
		return nil
	}
	nobj, err := t.Get(nodeGVR, "", nodeName)
	if err != nil {
		return nil
	}
	node := nobj.(*v1.Node)
	for _, d := range cobj.(*storagev1.CSINode).Spec.Drivers {
		if d.Name != driver || len(d.TopologyKeys) == 0 {
			continue
		}
		var reqs []v1.NodeSelectorRequirement
		for _, k := range d.TopologyKeys {
			if v, ok := node.Labels[k]; ok {
				reqs = append(reqs, v1.NodeSelectorRequirement{Key: k, Operator: v1.NodeSelectorOpIn, Values: []string{v}})
			}
		}
		if len(reqs) > 0 {
			return []v1.NodeSelectorTerm{{MatchExpressions: reqs}}
		}
	}
	return nil
}
