package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The three ways of passing users are reported side by side, each size a
// row with the list form's time over the set form's.
func TestUsersForms(t *testing.T) {
	rows := []row{
		{N: 1000, PlanListed: 300 * time.Millisecond, PlanList: 330 * time.Millisecond, PlanFile: 280 * time.Millisecond, MemList: 40 << 10},
		{N: 20000, PlanListed: 1700 * time.Millisecond, PlanList: 3600 * time.Millisecond, PlanFile: 800 * time.Millisecond, MemList: 100 << 10},
	}
	out, err := render("usersForms", reportData{Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 1000 | 0.30 s | 0.33 s | 0.28 s | 1.10× | 40 MiB |",
		"| 20000 | 1.70 s | 3.60 s | 0.80 s | 2.12× | 100 MiB |",
		"`set(string)` variable | `list(string)` variable | `file(\"users.json\")`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the report's golden files in testdata")

// The report says what it said when its prose was Fprintf calls: two
// sizes, the first applied, with and without the mTLS measurements, are
// rendered as testdata holds them (go test -run TestReport -update
// rewrites it after a change of the report's text).
func TestReport(t *testing.T) {
	floor, fx, rows, costs := reportFixture()
	m := machine{Date: "2026-12-07", CPUs: 2, CPU: "AMD EPYC", Go: "go1.26.8", OS: "linux", Arch: "amd64", Host: "vm"}
	noMTLS := fx
	noMTLS.MTLS, noMTLS.PlanNoTLS = mtlsShare{}, 0
	for golden, d := range map[string]reportData{
		"report.golden":         {Machine: m, Runs: 5, Load: "1.5 at the start, 2.5 at the end", Floor: floor, Fixed: fx, Rows: rows, Spawns: 20, Costs: costs},
		"report-no-mtls.golden": {Machine: m, Runs: 1, Load: "x", Floor: floor, Fixed: noMTLS, Rows: rows[1:]},
	} {
		got, err := report(d)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", golden)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("the report differs from %s (go test -run TestReport -update rewrites it):\n%s", path, got)
		}
	}
}

// reportFixture is one run's measurements at two sizes, the first applied.
func reportFixture() (time.Duration, fixed, []row, []spawnCost) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	bd := func(total, a, b, c, d int, starts int) breakdown {
		return breakdown{Total: ms(total), Starts: starts, RPCs: map[string]time.Duration{"ReadResource": ms(a), "PlanResourceChange": ms(b), "UpgradeResourceState": ms(c), "ApplyResourceChange": ms(d), "GetProviderSchema": ms(3), "ReadDataSource": ms(a / 2)}, StartUp: []time.Duration{ms(30 + a%7), ms(40), ms(35)}}
	}
	fx := fixed{Plan: ms(580), Apply1: ms(610), PlanTrace: bd(900, 10, 20, 0, 0, 3), ApplyTrace: bd(1000, 5, 6, 0, 70, 4), FloorTrace: breakdown{Total: ms(400), Starts: 1, RPCs: map[string]time.Duration{"GetProviderSchema": ms(2)}},
		Builtin: ms(250), FloorNoTLS: ms(200), PlanNoTLS: ms(300), MTLS: mtlsShare{Plans: 15, Provider: ms(900), ProviderAll: ms(3000), Tofu: ms(700), TofuAll: ms(5000), Sign: ms(3), Verify: ms(6)}}
	rows := []row{
		{N: 1000, PlanNoop: ms(700), PlanFlip: ms(800), Apply: ms(1900), Bare: ms(900), PlanListed: ms(750), PlanFile: ms(720), PlanList: ms(790), MemList: 40000, ReadData: ms(60), PlanData: ms(500),
			MemListed: 41000, MemFile: 42000, StateBare: 300000, StateListed: 350000, Applied: true, BreakdownData: bd(700, 60, 0, 0, 0, 2), BarePB: ms(850), BareMeta: ms(1000), List: ms(40), ListPB: ms(30), ListCold: ms(90),
			ReqPlan: 3, ReqApply: 1005, MemPlan: 39000, MemApply: 60000, Breakdown: bd(1100, 100, 50, 20, 0, 3), BreakdownListed: bd(1200, 120, 60, 25, 0, 3), BreakdownApply: bd(2500, 10, 50, 1, 1500, 4),
			ProfProvider: "flat flat% sum% cum cum%\n 10ms 1% 1% 100ms 10% main.main", ProfTofu: "flat flat% sum% cum cum%\n 20ms 2% 2% 200ms 20% main.main",
			StateStrings: 123456, StateStringsListed: 234567, TofuStrings: ms(30), TofuStringsListed: ms(60), TofuStringsFlip: ms(90), FlipStrings: 345678, Hub: hubSizes{Secret: 20000, Record: 30000}},
		{N: 20000, PlanNoop: ms(2700), PlanFlip: ms(3800), Apply: ms(0), Bare: ms(0), PlanListed: ms(2750), PlanFile: ms(1720), PlanList: ms(4790), MemList: 140000, ReadData: ms(260), PlanData: ms(1500),
			MemListed: 141000, MemFile: 142000, StateBare: 6000000, StateListed: 7000000, Applied: false, BreakdownData: bd(1700, 260, 0, 0, 0, 2), List: ms(400), ListPB: ms(300), ListCold: ms(450),
			ReqPlan: 5, MemPlan: 139000, Breakdown: bd(3100, 1000, 500, 200, 0, 3), BreakdownListed: bd(3200, 1200, 600, 250, 0, 3),
			ProfProvider: "provider top", ProfTofu: "tofu top",
			StateStrings: 2123456, StateStringsListed: 3234567, TofuStrings: ms(300), TofuStringsListed: ms(600), TofuStringsFlip: ms(900), FlipStrings: 4345678, Hub: hubSizes{Secret: 70000, Record: 80000}},
	}
	costs := []spawnCost{{"kept", 10.66, 2}, {"copied", 12.5, 3}, {"other", 1, 0}}
	return ms(340), fx, rows, costs
}
