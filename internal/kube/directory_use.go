package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// SharedDirectoryUse is what the namespace's unfinished pods mount of
// claim shared (one List of pods), for a plan: which users' directories a
// move by copy or a merge must wait for. The pods of the provider's own
// directory, copy and merge Jobs are left out (a move or merge under way
// is resumed, not waited for).
func (c *Client) SharedDirectoryUse(ctx context.Context, namespace, shared string) (migration.DirectoryUse, error) {
	var subs []string
	err := c.eachUnfinishedPod(ctx, namespace, func(p *corev1.Pod) {
		if comp := p.Labels[kubespawner.LabelAppComponent]; p.Labels[JobNameLabel] != "" && (comp == DirectoryJobComponent || comp == DirectoryCopyJobComponent || comp == MergeJobComponent) {
			return
		}
		subs = append(subs, SharedSubPaths(p, shared)...)
	})
	if err != nil {
		return migration.DirectoryUse{}, err
	}
	return migration.NewDirectoryUse(subs), nil
}

// eachUnfinishedPod calls fn with each pod of namespace that is neither
// Succeeded nor Failed, once (one paginated List).
func (c *Client) eachUnfinishedPod(ctx context.Context, namespace string, fn func(*corev1.Pod)) error {
	seen := map[string]bool{} // a restarted List shows a pod again
	opts := metav1.ListOptions{FieldSelector: "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)}
	err := eachPage(ctx, c, "pods", namespace, opts, c.podPage(namespace), func(l listed[corev1.Pod]) {
		for i := range l.items {
			p := &l.items[i]
			if seen[p.Name] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			seen[p.Name] = true
			fn(p)
		}
	})
	return explainIf(err, "list", "pods", namespace)
}

// SharedSubPaths are the sub-paths of claim shared that pod p's containers
// (init and ephemeral ones too) mount, as PodUsesDirectory reads them: ""
// for the whole claim or a sub-path expression; the directory in the
// environment of the shared layout's directory script, and the places it
// may rename the directory from.
func SharedSubPaths(p *corev1.Pod, shared string) []string {
	vols := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if pvc := v.PersistentVolumeClaim; pvc != nil && pvc.ClaimName == shared {
			vols[v.Name] = true
		}
	}
	if len(vols) == 0 {
		return nil
	}
	var subs []string
	add := func(cmd []string, env []corev1.EnvVar, mounts []corev1.VolumeMount) {
		for _, m := range mounts {
			if !vols[m.Name] {
				continue
			}
			sub := m.SubPath
			switch {
			case m.SubPathExpr != "":
				sub = ""
			case sub == "" && layoutScript(cmd):
				sub = envValue(env, "HOME_DIRECTORY")
				// It may rename the home from a place it had before.
				for i := 0; envValue(env, kubespawner.MovedFromVar(i)) != ""; i++ {
					subs = append(subs, envValue(env, kubespawner.MovedFromVar(i)))
				}
			}
			subs = append(subs, sub)
		}
	}
	for _, ct := range p.Spec.InitContainers {
		add(ct.Command, ct.Env, ct.VolumeMounts)
	}
	for _, ct := range p.Spec.Containers {
		add(ct.Command, ct.Env, ct.VolumeMounts)
	}
	for _, ct := range p.Spec.EphemeralContainers {
		add(ct.Command, ct.Env, ct.VolumeMounts)
	}
	return subs
}
