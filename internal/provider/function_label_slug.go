package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

var _ function.Function = (*LabelSlugFunction)(nil)

// LabelSlugFunction is provider::jupyter::label_slug, KubeSpawner's
// safe_slug(value, is_valid=is_valid_label) for label values.
type LabelSlugFunction struct{}

// NewLabelSlugFunction returns the label_slug function.
func NewLabelSlugFunction() function.Function { return &LabelSlugFunction{} }

func (f *LabelSlugFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "label_slug"
}

func (f *LabelSlugFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Slug a name the way KubeSpawner does for label values such as hub.jupyter.org/username",
		Description: "Returns KubeSpawner's safe_slug(value, is_valid=is_valid_label), the value of the " +
			"hub.jupyter.org/username label (and of hub.jupyter.org/servername on pods). Label values allow upper case, " +
			"'.' and '_', so \"Alice\" stays \"Alice\" here although it is \"alice---3bc51062\" in an object name. " +
			"Values that are not valid labels, or contain \"--\", are hashed as safe_slug does. " + nfcNote,
		MarkdownDescription: "Returns what KubeSpawner's `safe_slug(value, is_valid=is_valid_label)` returns: the value " +
			"KubeSpawner writes to the `hub.jupyter.org/username` label of pods and claims (and to " +
			"`hub.jupyter.org/servername` on pods).\n\n" +
			"Label values are looser than object names: upper case, `.` and `_` are allowed. So `Alice` stays `Alice` " +
			"here although it is `alice---3bc51062` in an object name (see `provider::jupyter::safe_slug`); `user_1` and " +
			"`a.b` pass unchanged, and the empty string (the server name of a user's default server) stays empty.\n\n" +
			"A value that is not a valid label (more than 63 characters, not starting and ending with a letter or digit, " +
			"or containing other characters) or that contains `--` is hashed exactly as `safe_slug` hashes it: " +
			"`mock@name` becomes `mock-name---6241db84`, `x-` becomes `x---c8b60efc`.\n\n" +
			"Use it to find a user's objects by label, e.g. the selector " +
			"`hub.jupyter.org/username=${provider::jupyter::label_slug(user)}`. Like KubeSpawner, the check lets the " +
			"non-ASCII letters U+0130, U+0131 and U+017F through in the middle of a value, which Kubernetes would " +
			"reject (KubeSpawner also lets U+212A through, which never reaches the function; see below).\n\n" + nfcNote,
		Parameters: []function.Parameter{
			function.StringParameter{
				Name:                "value",
				Description:         "The name to slug: a JupyterHub user name, or a server name (\"\" for the default server).",
				MarkdownDescription: "The name to slug: a JupyterHub user name, or a server name (`\"\"` for the default server).",
			},
		},
		Return: function.StringReturn{},
	}
}

func (f *LabelSlugFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var value string
	resp.Error = req.Arguments.Get(ctx, &value)
	if resp.Error != nil {
		return
	}
	if resp.Error = checkUTF8Argument(0, "value", value); resp.Error != nil {
		return
	}
	slug, err := kubespawner.SafeSlug(value, kubespawner.IsValidLabel, 0)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("Cannot slug %q: %s", value, err))
		return
	}
	resp.Error = resp.Result.Set(ctx, slug)
}
