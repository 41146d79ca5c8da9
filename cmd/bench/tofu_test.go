package main

import (
	"testing"
	"time"
)

// A trace as OpenTofu 1.12 writes it (lines shortened): two provider
// processes, the second answering three requests.
const traceLog = `2026-12-05T03:32:26.145Z [DEBUG] provider: starting plugin: path=.terraform/providers/x args=[x]
2026-12-05T03:32:26.146Z [DEBUG] provider: plugin started: path=x pid=3990
2026-12-05T03:32:26.180Z [TRACE] provider.terraform-provider-jupyter_v0.1.0: Received downstream response: tf_rpc=GetProviderSchema @caller=x tf_req_duration_ms=0 timestamp=2026-12-05T03:32:26.180Z
2026-12-05T03:32:26.186Z [DEBUG] provider: plugin exited
2026-12-05T03:32:26.239Z [DEBUG] provider: starting plugin: path=.terraform/providers/x args=[x]
  a continued line without a time
2026-12-05T03:32:26.286Z [TRACE] provider.terraform-provider-jupyter_v0.1.0: Received downstream response: tf_req_id=a tf_req_duration_ms=12 tf_rpc=UpgradeResourceState
2026-12-05T03:32:26.753Z [TRACE] provider.terraform-provider-jupyter_v0.1.0: Received downstream response: tf_rpc=ReadResource tf_req_duration_ms=389
2026-12-05T03:32:27.010Z [TRACE] provider.terraform-provider-jupyter_v0.1.0: Received downstream response: tf_rpc=PlanResourceChange tf_req_duration_ms=71
2026-12-05T03:32:27.032Z [DEBUG] provider: plugin exited
`

func TestParseTrace(t *testing.T) {
	b := parseTrace(traceLog)
	if b.Starts != 2 {
		t.Errorf("starts = %d, want 2", b.Starts)
	}
	want := map[string]time.Duration{"GetProviderSchema": 0, "UpgradeResourceState": 12 * time.Millisecond,
		"ReadResource": 389 * time.Millisecond, "PlanResourceChange": 71 * time.Millisecond}
	if len(b.RPCs) != len(want) {
		t.Errorf("rpcs = %v, want %v", b.RPCs, want)
	}
	for rpc, d := range want {
		if b.RPCs[rpc] != d {
			t.Errorf("rpcs[%s] = %s, want %s", rpc, b.RPCs[rpc], d)
		}
	}
	// Start-up: to the first answer of each process, less its duration.
	wantUp := []time.Duration{35 * time.Millisecond, 35 * time.Millisecond}
	if len(b.StartUp) != len(wantUp) || b.StartUp[0] != wantUp[0] || b.StartUp[1] != wantUp[1] {
		t.Errorf("startUp = %v, want %v", b.StartUp, wantUp)
	}
}
