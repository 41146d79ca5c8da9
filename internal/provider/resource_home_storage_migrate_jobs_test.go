package provider

import (
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// A move out of the shared layout, zero copy or by copy, is told the
// places the user's home had before a move by rename (expanded for the
// user): its directory Job renames the home from there, and a pod there
// holds the copy.
func TestMoveJobs_earlierPlaces(t *testing.T) {
	plan := &homeStorageModel{Layout: types.StringValue(layoutPerUser), SharedHome: &sharedModel{ClaimName: types.StringValue("home-nfs"),
		SubPathTemplate: types.StringValue("homes_v2/{username}"), DirectoryUID: types.Int64Value(1000), DirectoryGID: types.Int64Value(100),
		DirectoryMode: types.StringValue("0700"), InitImage: types.StringValue("busybox")}}
	cfg := safety.Config{Namespace: "hub", Scheme: kubespawner.SchemeSafe, SplitFrom: &safety.SharedHome{Claim: "home-nfs", SubPathTemplate: "homes_v2/{username}"}}
	res := safety.Result{MovedFrom: []string{"{escaped_username}", "old_/{safe_username}"}}
	up := safety.UserPlan{User: "Ada", Namespace: "hub", ClaimName: "claim-ada"}
	want := []string{"-41da", "old_/ada---99a563ab"} // KubeSpawner's escaped and safe names of Ada
	if got := splitJob(plan, cfg, res, up, claims.Spec{}).MovedFrom; !slices.Equal(got, want) {
		t.Errorf("zero copy: %q, want %q", got, want)
	}
	if got := directoryCopyJob(plan, cfg, res, up, claims.Spec{}).MovedFrom; !slices.Equal(got, want) {
		t.Errorf("by copy: %q, want %q", got, want)
	}
}
