package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/userset"
)

// userMap is a string attribute holding one JSON object keyed by username
// (users), read by internal/userset. It is its own
// validator: a value that does not parse fails validation, and the plan
// and apply that read it, saying why and what to write.
type userMap struct {
	attr  string
	parse func(string) ([]string, error)
	what  string // what the object maps each username to, for the description
	fix   string
}

var usersMap = userMap{"users", userset.Parse, "{}", "Write it with jsonencode, e.g. " + userset.Fix + "."}

// names are the usernames of v, sorted and in NFC; none when v is null or
// unknown. A value that does not parse adds an error at the attribute.
func (u userMap) names(v types.String, diags *diag.Diagnostics) []string {
	return u.read(v, path.Root(u.attr), diags)
}

func (u userMap) read(v types.String, at path.Path, diags *diag.Diagnostics) []string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	names, err := u.parse(v.ValueString())
	if err != nil {
		diags.AddAttributeError(at, "Invalid "+u.attr, u.attr+" "+err.Error()+". "+u.fix)
		return nil
	}
	return names
}

func (u userMap) Description(context.Context) string {
	return "a JSON object from each JupyterHub username to " + u.what
}
func (u userMap) MarkdownDescription(ctx context.Context) string {
	return u.Description(ctx)
}

// ValidateString checks a configured value: what the state holds is read
// as it was written (names, not the rules configured values meet).
func (u userMap) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := userset.ParseConfigured(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+u.attr, u.attr+" "+err.Error()+". "+u.fix)
	}
}
