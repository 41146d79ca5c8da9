package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

var _ function.Function = (*EscapeSlugFunction)(nil)

// EscapeSlugFunction is provider::jupyter::escape_slug, KubeSpawner's
// legacy "escape" slug scheme.
type EscapeSlugFunction struct{}

// NewEscapeSlugFunction returns the escape_slug function.
func NewEscapeSlugFunction() function.Function { return &EscapeSlugFunction{} }

func (f *EscapeSlugFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "escape_slug"
}

func (f *EscapeSlugFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Escape a name the way KubeSpawner 6 and earlier did (slug scheme \"escape\")",
		Description: "Returns KubeSpawner's legacy escape slug: every character other than a-z and 0-9, including '-' " +
			"and upper-case letters, is replaced byte by byte of its UTF-8 encoding by '-' and the byte in lower-case hex " +
			"without zero padding. \"user@email.com\" becomes \"user-40email-2ecom\", \"has-hyphen\" becomes " +
			"\"has-2dhyphen\" and \"Capital\" becomes \"-43apital\". The result has no length limit.",
		MarkdownDescription: "Returns KubeSpawner's legacy `escape` slug: the only scheme of KubeSpawner 6 and earlier, and " +
			"the one later versions use with `slug_scheme = \"escape\"`. Claims created under it keep their names after an " +
			"upgrade, so this is how to find the home claims of a long-running deployment.\n\n" +
			"Every character other than `a-z` and `0-9` (including `-` and upper-case letters) is replaced, for each byte " +
			"of its UTF-8 encoding, by `-` and the byte in lower-case hex without zero padding:\n\n" +
			"| value | escaped |\n|---|---|\n" +
			"| `username` | `username` |\n" +
			"| `has-hyphen` | `has-2dhyphen` |\n" +
			"| `Capital` | `-43apital` |\n" +
			"| `user@email.com` | `user-40email-2ecom` |\n" +
			"| `ü` | `-c3-bc` |\n\n" +
			"Unlike `provider::jupyter::safe_slug`, the result has no length limit and is not always a valid object name: " +
			"it may start with `-` or be longer than 63 characters. Name templates strip trailing `-` from the whole " +
			"result; use `provider::jupyter::expand_template` with slug scheme `escape` to get a full claim or pod name.",
		Parameters: []function.Parameter{
			function.StringParameter{
				Name:                "value",
				Description:         "The name to escape, e.g. a JupyterHub user name or server name.",
				MarkdownDescription: "The name to escape, e.g. a JupyterHub user name or server name.",
			},
		},
		Return: function.StringReturn{},
	}
}

func (f *EscapeSlugFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var value string
	resp.Error = req.Arguments.Get(ctx, &value)
	if resp.Error != nil {
		return
	}
	// The escape scheme could escape arbitrary bytes, but KubeSpawner only
	// ever sees Unicode names; refuse other input as the other functions do.
	if resp.Error = checkUTF8Argument(0, "value", value); resp.Error != nil {
		return
	}
	resp.Error = resp.Result.Set(ctx, kubespawner.EscapeSlug(value))
}
