package provider

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
)

// helm_values renders what the resource renders: the values of the same
// Build and Render, carrying the resource's hub_checksum; a checksum that
// is not the rendering's (an object that is not the resource as planned)
// fails naming the call to write, and so does a configuration that does
// not build.
func TestHelmValuesFunction(t *testing.T) {
	home := `{"pvc_name_template":"claim-{username}","slug_scheme":"safe","storage_access_modes":["ReadWriteMany"],"storage_capacity":"10Gi","storage_pvc_ensure":true}`
	profile := hubconfig.JSON(hubconfig.Profile{Slug: "small", DisplayName: "Small"}.Dict())
	var homeMap map[string]any
	if err := yaml.Unmarshal([]byte(home), &homeMap); err != nil {
		t.Fatal(err)
	}
	res, errs := hubconfig.Build(hubconfig.Config{Home: homeMap, ColocationLabel: hubconfig.DefaultColocationLabel,
		HomeMountPath: hubconfig.DefaultHomeMountPath, Profiles: []map[string]any{hubconfig.Profile{Slug: "small", DisplayName: "Small"}.Dict()}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	files := hubconfig.Render(res)
	want, err := hubconfig.HelmYAML(hubconfig.HelmValues(res, files))
	if err != nil {
		t.Fatal(err)
	}
	config := helmValuesConfig{
		HomeStorageSettings: types.StringValue(home),
		Profiles:            types.ListValueMust(types.StringType, []attr.Value{types.StringValue(profile)}),
		ColocationLabel:     types.StringValue(hubconfig.DefaultColocationLabel),
		ExtraSettingsJSON:   types.StringNull(),
		HomeMountPath:       types.StringValue(hubconfig.DefaultHomeMountPath),
		HubChecksum:         types.StringValue(files.Checksum),
	}
	got, err := helmValues(config)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("the function's values differ from the resource's rendering:\n%s\n---\n%s", got, want)
	}
	var values map[string]any
	if err := yaml.Unmarshal([]byte(got), &values); err != nil {
		t.Fatal(err)
	}
	if sum := values["hub"].(map[string]any)["annotations"].(map[string]any)[hubconfig.ChecksumAnnotation]; !reflect.DeepEqual(sum, files.Checksum) {
		t.Errorf("the values' checksum annotation is %v, want %s", sum, files.Checksum)
	}

	other := config
	other.ExtraSettingsJSON = types.StringValue(`{"start_timeout":600}`)
	if _, err := helmValues(other); err == nil || !strings.Contains(err.Error(), "provider::jupyter::helm_values(jupyter_spawner_config.hub)") {
		t.Errorf("inputs that do not render to hub_checksum: %v", err)
	}
	bad := config
	bad.HomeStorageSettings = types.StringValue(`{}`)
	if _, err := helmValues(bad); err == nil || !strings.Contains(err.Error(), "does not render") {
		t.Errorf("inputs that do not build: %v", err)
	}
}
