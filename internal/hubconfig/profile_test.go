package hubconfig

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

func f(v float64) *float64 { return &v }

func TestSpawnerParseBytes(t *testing.T) {
	good := map[string]int64{"8G": 8 << 30, "512M": 512 << 20, "1.5G": 3 << 29, "1T": 1 << 40, "2K": 2048, "1000": 1000}
	for s, want := range good {
		if got, err := ParseBytes(s); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"8Gi", "8GB", "8g", "", "G", "-1", "1.5"} {
		if _, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q) accepted", s)
		} else if !strings.Contains(err.Error(), `"8G"`) {
			t.Errorf("error for %q does not show the fix: %v", s, err)
		}
	}
}

func findings(fs []claims.Finding) map[string]string {
	out := map[string]string{}
	for _, f := range fs {
		out[f.Attribute] = f.Summary + ": " + f.Detail
	}
	return out
}

func TestSpawnerProfileValidate(t *testing.T) {
	cases := []struct {
		name string
		p    Profile
		attr string
		want string
	}{
		{"gpu zero", Profile{DisplayName: "x", GPU: &GPU{Count: 0}}, "gpu.count", "remove gpu"},
		{"cpu guarantee above limit", Profile{DisplayName: "x", CPUGuarantee: f(4), CPULimit: f(2)}, "cpu_guarantee", "cpu_limit = 2"},
		{"mem guarantee above limit", Profile{DisplayName: "x", MemGuarantee: "8G", MemLimit: "4G"}, "mem_guarantee", `mem_limit = "4G"`},
		{"kubernetes unit", Profile{DisplayName: "x", MemLimit: "4Gi"}, "mem_limit", "not accepted by KubeSpawner"},
		{"bad regex", Profile{DisplayName: "x", Options: map[string]Option{"image": {Choices: map[string]Choice{"a": {}}, Unlisted: &UnlistedChoice{ValidationRegex: "^(unclosed"}}}},
			`options["image"].unlisted_choice.validation_regex`, "does not compile"},
		{"only unlisted", Profile{DisplayName: "x", Options: map[string]Option{"image": {Unlisted: &UnlistedChoice{}}}}, `options["image"]`, "Unable to determine a default choice"},
		{"two defaults", Profile{DisplayName: "x", Options: map[string]Option{"o": {Choices: map[string]Choice{"a": {Default: true}, "b": {Default: true}}}}}, `options["o"]`, "at most one"},
		{"reserved volume", Profile{DisplayName: "x", Volumes: []Volume{{Name: "home", MountPath: "/x", ClaimName: "c"}}}, "volumes[0].name", "home volume"},
		{"relative mount", Profile{DisplayName: "x", Volumes: []Volume{{Name: "d", MountPath: "data", ClaimName: "c"}}}, "volumes[0].mount_path", "absolute"},
		{"equal without key", Profile{DisplayName: "x", Tolerations: []Toleration{{Operator: "Equal"}}}, "tolerations[0]", "needs a key"},
		{"bad slug", Profile{DisplayName: "x", Slug: "GPU Large"}, "slug", "lowercase"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := findings(tc.p.Validate())
			if msg, ok := got[tc.attr]; !ok || !strings.Contains(msg, tc.want) {
				t.Fatalf("want a finding on %s containing %q, got %v", tc.attr, tc.want, got)
			}
		})
	}
	ok := Profile{Slug: "gpu", DisplayName: "GPU", CPUGuarantee: f(2), CPULimit: f(2), MemGuarantee: "8G", MemLimit: "8G", GPU: &GPU{Count: 1},
		Options: map[string]Option{"image": {Choices: map[string]Choice{"a": {Default: true}}, Unlisted: &UnlistedChoice{ValidationRegex: `^quay\.io/[a-z0-9./-]+(?=:)`}}}}
	if fs := ok.Validate(); len(fs) > 0 {
		t.Fatalf("valid profile rejected: %v", fs)
	}
}

// The profile dict has the keys and shapes KubeSpawner reads.
func TestSpawnerProfileDict(t *testing.T) {
	secs := int64(30)
	p := Profile{
		Slug: "gpu", DisplayName: "GPU", Description: "One GPU", Default: true, Image: "img:1",
		CPUGuarantee: f(1.5), CPULimit: f(4), MemGuarantee: "8G", MemLimit: "16G",
		GPU:          &GPU{Count: 2, ResourceName: "amd.com/gpu"},
		NodeSelector: map[string]string{"pool": "gpu"},
		Tolerations:  []Toleration{{Key: "amd.com/gpu", Operator: "Exists", Effect: "NoSchedule"}, {Key: "k", Value: "v", TolerationSeconds: &secs}},
		Environment:  map[string]string{"A": "1"},
		Volumes:      []Volume{{Name: "data", MountPath: "/data", SubPath: "team", ReadOnly: true, ClaimName: "shared-data"}},
		Options: map[string]Option{"image": {DisplayName: "Image", Choices: map[string]Choice{"v1": {DisplayName: "V1", Default: true, Override: map[string]any{"image": "img:v1"}}},
			Unlisted: &UnlistedChoice{DisplayName: "Other", ValidationRegex: "^img:.+$", ValidationMessage: "must be img", Override: map[string]any{"image": "{value}"}}}},
		Override: map[string]any{"image": "img:override", "default_url": "/lab"},
	}
	want := `{"default":true,"description":"One GPU","display_name":"GPU","kubespawner_override":{` +
		`"cpu_guarantee":1.5,"cpu_limit":4,"default_url":"/lab","environment":{"A":"1"},` +
		`"extra_resource_guarantees":{"amd.com/gpu":"2"},"extra_resource_limits":{"amd.com/gpu":"2"},"image":"img:override",` +
		`"mem_guarantee":"8G","mem_limit":"16G","node_selector":{"pool":"gpu"},` +
		`"tolerations":[{"effect":"NoSchedule","key":"amd.com/gpu","operator":"Exists"},{"key":"k","operator":"Equal","tolerationSeconds":30,"value":"v"}],` +
		`"volume_mounts":[{"mountPath":"/data","name":"data","readOnly":true,"subPath":"team"}],` +
		`"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"shared-data","readOnly":true}}]},` +
		`"profile_options":{"image":{"choices":{"v1":{"default":true,"display_name":"V1","kubespawner_override":{"image":"img:v1"}}},"display_name":"Image",` +
		`"unlisted_choice":{"display_name":"Other","enabled":true,"kubespawner_override":{"image":"{value}"},"validation_message":"must be img","validation_regex":"^img:.+$"}}},` +
		`"slug":"gpu"}`
	if got := JSON(p.Dict()); got != want {
		t.Fatalf("profile dict\n got: %s\nwant: %s", got, want)
	}
	if got := JSON(Profile{DisplayName: "Small"}.Dict()); got != `{"display_name":"Small"}` {
		t.Fatalf("minimal profile = %s", got)
	}
	d := p.Demand()
	if d.CPUMillis != 1500 || d.MemBytes != 8<<30 || !reflect.DeepEqual(d.Extended, map[string]int64{"amd.com/gpu": 2}) {
		t.Fatalf("demand = %+v", d)
	}
}

// TestSpawnerProfileValidate_oneOrder: two bad sizes, or two bad core counts,
// are reported guarantee first at every run.
func TestSpawnerProfileValidate_oneOrder(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	p := Profile{DisplayName: "x", MemGuarantee: "lots", MemLimit: "more", CPUGuarantee: f(-2), CPULimit: f(-1)}
	want := []string{"mem_guarantee", "mem_limit", "cpu_guarantee", "cpu_limit"}
	for range 30 {
		var got []string
		for _, e := range p.Validate() {
			got = append(got, e.Attribute)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("attributes = %q, want %q", got, want)
		}
	}
}
