package provider

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

var _ function.Function = (*SafeSlugFunction)(nil)

// SafeSlugFunction is provider::jupyter::safe_slug, KubeSpawner's
// safe_slug(value) for object names.
type SafeSlugFunction struct{}

// NewSafeSlugFunction returns the safe_slug function.
func NewSafeSlugFunction() function.Function { return &SafeSlugFunction{} }

func (f *SafeSlugFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "safe_slug"
}

// nfcNote is shared by the descriptions of the functions that hash names.
const nfcNote = "OpenTofu and Terraform keep strings in Unicode normal form C, so a name that JupyterHub holds in " +
	"another form (rare) reaches the function normalised and may slug differently than in KubeSpawner; for example " +
	"the KELVIN SIGN (U+212A) arrives as an ASCII K."

func (f *SafeSlugFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Slug a name the way KubeSpawner does for Kubernetes object names",
		Description: "Returns KubeSpawner's safe_slug(value), the slug KubeSpawner 7 and later (slug scheme \"safe\") " +
			"use in object names. A valid object name of at most 63 characters without \"--\" is returned unchanged; " +
			"anything else is lowercased, stripped to a-z, 0-9 and '-', and suffixed with \"---\" and 8 hex digits of " +
			"its SHA-256, at most 32 characters in all: \"Alice\" becomes \"alice---3bc51062\". " + nfcNote,
		MarkdownDescription: "Returns what KubeSpawner's `safe_slug(value)` returns: the slug that KubeSpawner 7 and later " +
			"(slug scheme `safe`, the default) use for a name inside a Kubernetes object name.\n\n" +
			"- A value that is already a valid object name (1 to 63 characters of `a-z`, `0-9` and `-`, starting with a " +
			"letter and ending with a letter or digit) and contains no `--` is returned unchanged: `jupyter-alex` stays " +
			"`jupyter-alex`.\n" +
			"- Anything else is hashed: lowercased, every run of other characters replaced by one `-`, truncated, and " +
			"suffixed with `---` and the first 8 hex digits of the SHA-256 of the original value, at most 32 characters " +
			"in all. `Alice` becomes `alice---3bc51062`, `user@email.com` becomes `user-email-com---0925f997`, " +
			"`9z9` becomes `x-9z9---224de202` (a name must start with a letter) and a 64-character name is hashed as well.\n" +
			"- A value containing `--` is always hashed (`username--servername` becomes " +
			"`username-servername---d957f1de`), so a slug can never be mistaken for a `{username}--{servername}` join.\n\n" +
			"This is `safe_slug` without a max length. KubeSpawner's templates (`{username}`, `{servername}`, " +
			"`{user_server}`) limit each field to 48 characters, so long names come out differently there: use " +
			"`provider::jupyter::expand_template` to compute a pod or claim name, and `provider::jupyter::label_slug` " +
			"for the `hub.jupyter.org/username` label, which allows upper case (`Alice` stays `Alice` as a label).\n\n" +
			nfcNote,
		Parameters: []function.Parameter{
			function.StringParameter{
				Name:        "value",
				Description: "The name to slug, e.g. a JupyterHub user name or server name, exactly as JupyterHub stores it.",
				MarkdownDescription: "The name to slug, e.g. a JupyterHub user name or server name, exactly as " +
					"JupyterHub stores it (after its authenticator's normalisation, which usually lowercases).",
			},
		},
		Return: function.StringReturn{},
	}
}

func (f *SafeSlugFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var value string
	resp.Error = req.Arguments.Get(ctx, &value)
	if resp.Error != nil {
		return
	}
	if resp.Error = checkUTF8Argument(0, "value", value); resp.Error != nil {
		return
	}
	slug, err := kubespawner.SafeSlug(value, nil, 0)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("Cannot slug %q: %s", value, err))
		return
	}
	resp.Error = resp.Result.Set(ctx, slug)
}

// checkUTF8Argument rejects an argument that is not valid UTF-8. OpenTofu
// and Terraform never send such strings, but a name KubeSpawner slugs is a
// Python str and always valid Unicode, so the functions refuse to guess.
// Like every function error text it ends without a period: OpenTofu and
// Terraform add one.
func checkUTF8Argument(pos int64, name, value string) *function.FuncError {
	if utf8.ValidString(value) {
		return nil
	}
	return function.NewArgumentFuncError(pos, fmt.Sprintf(
		"The %s %q is not valid UTF-8. JupyterHub user and server names are Unicode text; "+
			"pass the name itself, not raw or differently encoded bytes", name, value))
}
