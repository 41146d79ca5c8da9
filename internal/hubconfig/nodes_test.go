package hubconfig

import (
	"strings"
	"testing"
)

var (
	cpuNode = Node{Name: "cpu-1", Labels: map[string]string{"pool": "cpu"}, CPUMillis: 4000, MemBytes: 16 << 30}
	gpuNode = Node{Name: "gpu-1", Labels: map[string]string{"pool": "gpu"}, CPUMillis: 8000, MemBytes: 64 << 30,
		Taints: []Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: "NoSchedule"}}, Extended: map[string]int64{"nvidia.com/gpu": 1}}
)

func TestSpawnerTolerates(t *testing.T) {
	taint := Taint{Key: "nvidia.com/gpu", Value: "true", Effect: "NoSchedule"}
	cases := []struct {
		tol  Toleration
		want bool
	}{
		{Toleration{Key: "nvidia.com/gpu", Operator: "Exists"}, true},
		{Toleration{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoExecute"}, false},
		{Toleration{Key: "nvidia.com/gpu", Value: "true"}, true},
		{Toleration{Key: "nvidia.com/gpu", Value: "false", Operator: "Equal"}, false},
		{Toleration{Operator: "Exists"}, true},
		{Toleration{Key: "other", Operator: "Exists"}, false},
	}
	for _, tc := range cases {
		if got := tc.tol.Tolerates(taint); got != tc.want {
			t.Errorf("%+v tolerates %+v = %v, want %v", tc.tol, taint, got, tc.want)
		}
	}
}

func TestSpawnerCheckProfile(t *testing.T) {
	nodes := []Node{cpuNode, gpuNode}
	gpu := Demand{Tolerations: []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}, CPUMillis: 2000, MemBytes: 8 << 30, Extended: map[string]int64{"nvidia.com/gpu": 1}}
	if errs, warns := CheckProfile("gpu", gpu, nodes, ProfileCheck{RequireSchedulable: true}); len(errs)+len(warns) > 0 {
		t.Fatalf("a GPU profile that fits the GPU node: %v %v", errs, warns)
	}
	// Without the toleration the taint keeps it off the only GPU node.
	noTol := gpu
	noTol.Tolerations = nil
	errs, warns := CheckProfile("gpu", noTol, nodes, ProfileCheck{RequireSchedulable: true})
	if len(errs) != 0 || len(warns) != 1 || !strings.Contains(warns[0].Detail, "untolerated taint nvidia.com/gpu=true:NoSchedule") ||
		!strings.Contains(warns[0].Detail, "autoscaler may add one") {
		t.Fatalf("want one warning naming the taint: %v %v", errs, warns)
	}
	// A selector no node has.
	_, warns = CheckProfile("x", Demand{NodeSelector: map[string]string{"pool": "tpu"}}, nodes, ProfileCheck{RequireSchedulable: true})
	if len(warns) != 1 || !strings.Contains(warns[0].Detail, "no label pool=tpu") {
		t.Fatalf("selector: %v", warns)
	}
	// Guarantees above every node: an error only with require_schedulable.
	huge := Demand{CPUMillis: 16000, MemBytes: 8 << 30}
	errs, warns = CheckProfile("huge", huge, nodes, ProfileCheck{RequireSchedulable: true})
	if len(errs) != 1 || errs[0].Attribute != "require_schedulable" || !strings.Contains(errs[0].Detail, "allocatable CPU 8 < 16") || len(warns) != 0 {
		t.Fatalf("require_schedulable: %v %v", errs, warns)
	}
	errs, warns = CheckProfile("huge", huge, nodes, ProfileCheck{RequireSchedulable: false})
	if len(errs) != 0 || len(warns) != 1 {
		t.Fatalf("without require_schedulable: %v %v", errs, warns)
	}
	// Fits by size but not by selector: never an error.
	if errs, _ := CheckProfile("x", Demand{NodeSelector: map[string]string{"pool": "tpu"}, CPUMillis: 1000}, nodes, ProfileCheck{RequireSchedulable: true}); len(errs) != 0 {
		t.Fatalf("selector mismatch is an error: %v", errs)
	}
	// A cordoned node does not count.
	cordoned := cpuNode
	cordoned.Unschedulable = true
	if _, warns := CheckProfile("small", Demand{CPUMillis: 100}, []Node{cordoned}, ProfileCheck{RequireSchedulable: false}); len(warns) != 1 || !strings.Contains(warns[0].Detail, "cordoned") {
		t.Fatalf("cordoned: %v", warns)
	}
	if _, warns := CheckProfile("small", Demand{}, nil, ProfileCheck{RequireSchedulable: true}); len(warns) != 1 {
		t.Fatalf("no nodes: %v", warns)
	}
}

func TestSpawnerUnits(t *testing.T) {
	for in, want := range map[int64]string{1500: "1.5", 2000: "2", 250: "0.25"} {
		if got := Cores(in); got != want {
			t.Errorf("Cores(%d) = %s", in, got)
		}
	}
	for in, want := range map[int64]string{8 << 30: "8Gi", 3 << 29: "1.5Gi", 512: "512"} {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%d) = %s", in, got)
		}
	}
}
