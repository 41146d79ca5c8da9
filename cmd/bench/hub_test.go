package main

import (
	"reflect"
	"testing"
)

// The benchmark's lines are read as go test prints them.
func TestParseSpawnHooks(t *testing.T) {
	out := "goos: linux\nBenchmarkSpawnHooks/kept-2         \t      10\t 151423018 ns/op\t        10.66 ms/hooks\t         2.000 requests/spawn\n" +
		"BenchmarkSpawnHooks/new_user-2               \t      10\t  14956465 ns/op\t         9.366 ms/hooks\t         1.000 requests/spawn\nPASS\n"
	got := parseSpawnHooks(out)
	want := []spawnCost{{"kept", 10.66, 2}, {"new_user", 9.366, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
