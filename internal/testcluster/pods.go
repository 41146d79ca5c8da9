package testcluster

import (
	"context"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Pods on the test node, for tests that put files into claims and read them
// back: each runs one ToolsImage container with a claim at /home.

// ClaimPod is a pod that runs script with claim mounted at /home and ends.
func ClaimPod(namespace, name, claim, script string) *corev1.Pod {
	no, grace := false, int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: ToolsImage, ImagePullPolicy: corev1.PullNever,
				Command:                  []string{"sh", "-c", script},
				VolumeMounts:             []corev1.VolumeMount{{Name: "home", MountPath: "/home"}},
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

// RunPod creates pod, waits until it has ended and deletes it. It returns
// its termination message, and an error when it did not succeed.
func RunPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) (string, error) {
	pods := cs.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	var msg string
	for {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			msg = TerminationMessage(p)
			if p.Status.Phase == corev1.PodFailed {
				return msg, fmt.Errorf("pod %s failed: %s", pod.Name, msg)
			}
			break
		}
		if err := pause(ctx); err != nil {
			return "", fmt.Errorf("pod %s: %w (phase %s)", pod.Name, err, p.Status.Phase)
		}
	}
	return msg, DeletePod(ctx, cs, pod.Namespace, pod.Name)
}

// DeletePod deletes a pod and waits until it is gone.
func DeletePod(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	pods := cs.CoreV1().Pods(namespace)
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("pod %s not deleted: %w", name, err)
		}
	}
}

// TerminationMessage is what the pod's container wrote to its termination log.
func TerminationMessage(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return s.State.Terminated.Message
		}
	}
	return ""
}

func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(200 * time.Millisecond):
		return nil
	}
}

// WriteFilesScript is a script that writes files (relative path: content)
// under dir, any bytes (printf with octal escapes keeps the script text).
func WriteFilesScript(dir string, files map[string]string) string {
	var b strings.Builder
	b.WriteString("set -eu\n")
	for _, name := range sortedKeys(files) {
		fmt.Fprintf(&b, "mkdir -p '%s'\nprintf '", path.Join(dir, path.Dir(name)))
		for _, c := range []byte(files[name]) {
			fmt.Fprintf(&b, "\\%03o", c)
		}
		fmt.Fprintf(&b, "' > '%s'\n", path.Join(dir, name))
	}
	return b.String()
}

// ReadFilesScript is a script that writes every regular file under dir to
// the termination log, a line "PATH HEX" each (the API keeps only valid
// UTF-8 of a termination message, at most 4096 bytes); ParseFiles reads it.
func ReadFilesScript(dir string) string {
	return fmt.Sprintf(`set -eu
cd '%s'
find . -type f | sort | while read -r f; do
  printf '%%s ' "${f#./}"; od -An -v -tx1 "$f" | tr -d ' \n'; echo
done > /dev/termination-log
`, dir)
}

// ParseFiles reads the output of ReadFilesScript.
func ParseFiles(msg string) (map[string]string, error) {
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(msg), "\n") {
		if line == "" {
			continue
		}
		name, hexed, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(hexed)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		files[name] = string(b)
	}
	return files, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ServerPod is a pod that, like a user's server, keeps running with claim
// mounted at /home: it runs script, then is Ready until deleted.
func ServerPod(namespace, name, claim, script string) *corev1.Pod {
	p := ClaimPod(namespace, name, claim, script+"\ntouch /tmp/ready\nexec sleep 86400\n")
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-e", "/tmp/ready"}}},
		PeriodSeconds: 1,
	}
	return p
}

// StartPod creates pod and waits until it is Ready (a ServerPod: its
// script has run). A pod that ends first is an error.
func StartPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) error {
	pods := cs.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	for {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return fmt.Errorf("pod %s ended (%s): %s", pod.Name, p.Status.Phase, TerminationMessage(p))
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("pod %s not ready: %w (phase %s)", pod.Name, err, p.Status.Phase)
		}
	}
}
