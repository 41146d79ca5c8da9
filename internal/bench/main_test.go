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
	if b.starts != 2 {
		t.Errorf("starts = %d, want 2", b.starts)
	}
	want := map[string]time.Duration{"GetProviderSchema": 0, "UpgradeResourceState": 12 * time.Millisecond,
		"ReadResource": 389 * time.Millisecond, "PlanResourceChange": 71 * time.Millisecond}
	if len(b.rpcs) != len(want) {
		t.Errorf("rpcs = %v, want %v", b.rpcs, want)
	}
	for rpc, d := range want {
		if b.rpcs[rpc] != d {
			t.Errorf("rpcs[%s] = %s, want %s", rpc, b.rpcs[rpc], d)
		}
	}
	// Start-up: to the first answer of each process, less its duration.
	wantUp := []time.Duration{35 * time.Millisecond, 35 * time.Millisecond}
	if len(b.startUp) != len(wantUp) || b.startUp[0] != wantUp[0] || b.startUp[1] != wantUp[1] {
		t.Errorf("startUp = %v, want %v", b.startUp, wantUp)
	}
}

func TestParseFocus(t *testing.T) {
	for _, c := range []struct {
		out            string
		matched, total time.Duration
	}{
		{"Type: cpu\nActive filters:\n   focus=x\nShowing nodes accounting for 20ms, 3.57% of 560ms total\n", 20 * time.Millisecond, 560 * time.Millisecond},
		{"Showing nodes accounting for 1.20s, 40.00% of 3s total\n", 1200 * time.Millisecond, 3 * time.Second},
		{"Active filters:\n   focus=nomatch\nShowing nodes accounting for 0, 0% of 560ms total\n", 0, 560 * time.Millisecond},
	} {
		m, total, err := parseFocus(c.out)
		if err != nil || m != c.matched || total != c.total {
			t.Errorf("parseFocus(%q) = %s, %s, %v; want %s, %s", c.out, m, total, err, c.matched, c.total)
		}
	}
	if _, _, err := parseFocus("no profile here"); err == nil {
		t.Error("an output without totals gave no error")
	}
}
