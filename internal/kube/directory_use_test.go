package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// What a plan reads of pods' mounts (SharedSubPaths, migration.DirectoryUse)
// says a directory is in use exactly when PodUsesDirectory, which the move
// checks at apply, says so.
func TestSharedSubPaths_agreesWithPodUsesDirectory(t *testing.T) {
	script, _ := kubespawner.SharedDirectoryCommand("", 0, 0, "")
	pod := func(containers ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "home-nfs"}}},
				{Name: "other", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "scratch"}}}},
			Containers: containers}}
	}
	mount := func(sub, expr string) corev1.Container {
		return corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "home", SubPath: sub, SubPathExpr: expr}}}
	}
	pods := []*corev1.Pod{
		pod(mount("home/alice", "")), pod(mount("home/bob/notebooks", "")), pod(mount("home", "")), pod(mount("", "")),
		pod(mount("", "$(USER)")), pod(mount("../x", "")), pod(corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "other"}}}),
		pod(corev1.Container{Command: script, Env: []corev1.EnvVar{{Name: "HOME_DIRECTORY", Value: "home/carol"}}, VolumeMounts: []corev1.VolumeMount{{Name: "home"}}}),
	}
	for i, p := range pods {
		use := migration.NewDirectoryUse(SharedSubPaths(p, "home-nfs"))
		for _, dir := range []string{"home/alice", "home/al", "home/bob", "home/carol", "home/dave", "home", "x"} {
			if got, want := use.Uses(dir), PodUsesDirectory(p, "home-nfs", dir, "claim-none"); got != want {
				t.Errorf("pod %d, %s: the plan says %v, the move %v", i, dir, got, want)
			}
		}
	}
}
