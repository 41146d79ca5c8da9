package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Which pods use which directory of the shared claim, by the one rule the
// plan (SharedSubPaths, migration.DirectoryUse) and the move
// (PodUsesDirectory) read: each kind of container, the layout's directory
// script by its environment, sub-path expressions and the whole claim; the
// move also counts a mount of the user's new claim.
func TestPodUsesDirectory(t *testing.T) {
	script, _ := kubespawner.SharedDirectoryCommand(kubespawner.Directory{})
	vols := []corev1.Volume{
		{Name: "home", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "home-nfs"}}},
		{Name: "new", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-alice"}}},
		{Name: "other", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "scratch"}}},
	}
	mount := func(vol, sub, expr string) corev1.Container {
		return corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: vol, SubPath: sub, SubPathExpr: expr}}}
	}
	layout := func(env ...corev1.EnvVar) corev1.Container {
		return corev1.Container{Command: script, Env: env, VolumeMounts: []corev1.VolumeMount{{Name: "home"}}}
	}
	dirs := []string{"home/alice", "home/al", "home/bob", "home/carol", "x"}
	for _, tc := range []struct {
		name string
		pod  corev1.PodSpec
		want []string // the directories it uses
	}{
		{"alice's directory", corev1.PodSpec{Containers: []corev1.Container{mount("home", "home/alice", "")}}, []string{"home/alice"}},
		{"below bob's", corev1.PodSpec{Containers: []corev1.Container{mount("home", "home/bob/notebooks", "")}}, []string{"home/bob"}},
		{"above all", corev1.PodSpec{InitContainers: []corev1.Container{mount("home", "home", "")}}, []string{"home/alice", "home/al", "home/bob", "home/carol"}},
		{"the whole claim", corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(mount("home", "", ""))}}}, dirs},
		{"an expression", corev1.PodSpec{Containers: []corev1.Container{mount("home", "", "$(USER)")}}, dirs},
		{"climbing out", corev1.PodSpec{Containers: []corev1.Container{mount("home", "../x", "")}}, dirs},
		{"another claim", corev1.PodSpec{Containers: []corev1.Container{mount("other", "", "")}}, nil},
		{"the layout's script", corev1.PodSpec{InitContainers: []corev1.Container{layout(corev1.EnvVar{Name: "HOME_DIRECTORY", Value: "home/carol"})}}, []string{"home/carol"}},
		{"the layout's script renaming", corev1.PodSpec{InitContainers: []corev1.Container{layout(corev1.EnvVar{Name: "HOME_DIRECTORY", Value: "home/carol"},
			corev1.EnvVar{Name: "HOME_MOVED_FROM_1", Value: "x"}, corev1.EnvVar{Name: "HOME_MOVED_FROM_2", Value: "home/bob"})}}, []string{"home/carol", "home/bob", "x"}},
		{"the layout's script, directory not plain", corev1.PodSpec{InitContainers: []corev1.Container{layout(corev1.EnvVar{Name: "HOME_DIRECTORY", ValueFrom: &corev1.EnvVarSource{}})}}, dirs},
	} {
		p := &corev1.Pod{Spec: tc.pod}
		p.Spec.Volumes = vols
		use := migration.NewDirectoryUse(SharedSubPaths(p, "home-nfs"))
		for _, dir := range dirs {
			want := false
			for _, w := range tc.want {
				want = want || w == dir
			}
			if got := use.Uses(dir); got != want {
				t.Errorf("%s, %s: the plan says %v, want %v", tc.name, dir, got, want)
			}
			if got := PodUsesDirectory(p, "home-nfs", []string{dir}, "claim-none"); got != want {
				t.Errorf("%s, %s: the move says %v, want %v", tc.name, dir, got, want)
			}
		}
	}
	onClaim := &corev1.Pod{Spec: corev1.PodSpec{Volumes: vols, Containers: []corev1.Container{mount("new", "", "")}}}
	if !PodUsesDirectory(onClaim, "home-nfs", []string{"home/alice"}, "claim-alice") {
		t.Error("a pod on the user's new claim does not hold the move")
	}
}
