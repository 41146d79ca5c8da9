package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

var _ function.Function = (*ExpandTemplateFunction)(nil)

// ExpandTemplateFunction is provider::jupyter::expand_template: the name
// KubeSpawner renders from a template such as pvc_name_template.
type ExpandTemplateFunction struct{}

// NewExpandTemplateFunction returns the expand_template function.
func NewExpandTemplateFunction() function.Function { return &ExpandTemplateFunction{} }

// Argument positions of expand_template, for errors.
const (
	expandArgTemplate int64 = iota
	expandArgUsername
	expandArgServername
	expandArgScheme
)

// templateSyntaxHint ends every template error. Like all function error
// texts it has no final period: OpenTofu and Terraform add one.
const templateSyntaxHint = "Templates use Python str.format syntax, as KubeSpawner's pod_name_template and " +
	"pvc_name_template do (e.g. \"claim-{username}--{servername}\"); write {{ and }} for literal braces. " +
	"This function renders {username}, {servername} and {user_server}, their safe_ and escaped_ forms " +
	"(e.g. {safe_username}) and {unescaped_username} and {unescaped_servername}"

// valueFields are the template fields that need more than the user and
// server names; expand_template cannot render them.
var valueFields = []string{
	kubespawner.FieldUserID, kubespawner.FieldHubNamespace, kubespawner.FieldNamespace,
	kubespawner.FieldPodName, kubespawner.FieldPVCName,
}

func (f *ExpandTemplateFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "expand_template"
}

func (f *ExpandTemplateFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Render a KubeSpawner name template (pvc_name_template, pod_name_template) for one user server",
		Description: "Returns the name KubeSpawner renders from a template such as pvc_name_template for a user and " +
			"server: \"claim-{username}\" gives \"claim-alice\" for alice and \"claim-alice---3bc51062\" for Alice under " +
			"the safe scheme (\"claim--41lice\" under escape). Trailing '-' are stripped unless the template ends with " +
			"'-', so \"claim-{username}--{servername}\" gives \"claim-alice\" for the default server. " + nfcNote,
		MarkdownDescription: "Returns the name KubeSpawner renders from a name template, such as `pvc_name_template` " +
			"(KubeSpawner's default `claim-{user_server}`; `claim-{username}--{servername}` before KubeSpawner 7, " +
			"`claim-{username}{servername}` in the zero-to-jupyterhub chart before version 4) or `pod_name_template` " +
			"(`jupyter-{user_server}`), for one user server. The template is expanded exactly as KubeSpawner's " +
			"`_expand_user_properties` does:\n\n" +
			"- `{username}`, `{servername}` and `{user_server}` follow `slug_scheme`. Under `safe` each name is slugged " +
			"as `provider::jupyter::safe_slug` does, but with at most 48 characters; `{user_server}` is " +
			"`{username}--{servername}`, or `{username}` for the default server, and when that would be longer than " +
			"48 characters both names are hashed together. Under `escape` each name is escaped as " +
			"`provider::jupyter::escape_slug` does.\n" +
			"- `{safe_username}`, `{escaped_username}` and `{unescaped_username}` (the raw name), and the same for " +
			"`servername` and `user_server` (no `unescaped_user_server`), ignore the scheme.\n" +
			"- The syntax is Python's `str.format`: `{{` and `}}` are literal braces, and conversions (`!r`), indexes " +
			"(`[0]`) and format specs (`:>20`) work as in Python.\n" +
			"- Trailing `-` are stripped from the result unless the template itself ends with `-`, so " +
			"`claim-{username}--{servername}` gives `claim-alice` for alice's default server and `claim-alice--gpu` for " +
			"her server `gpu`.\n\n" +
			"| template | username | servername | scheme | result |\n|---|---|---|---|---|\n" +
			"| `claim-{username}` | `alice` | `\"\"` | `safe` | `claim-alice` |\n" +
			"| `claim-{username}` | `Alice` | `\"\"` | `safe` | `claim-alice---3bc51062` |\n" +
			"| `claim-{username}` | `Alice` | `\"\"` | `escape` | `claim--41lice` |\n" +
			"| `jupyter-{user_server}` | `user` | `server` | `safe` | `jupyter-user--server` |\n" +
			"| `claim-{username}--{servername}` | `test@example.org` | `named` | `escape` | `claim-test-40example-2eorg--named` |\n\n" +
			"The fields `{userid}`, `{hubnamespace}`, `{namespace}`, `{pod_name}` and `{pvc_name}` need values this " +
			"function does not take; a template that uses them is an error. An unknown field, a malformed template or an " +
			"unknown scheme is an error too, naming the argument and the problem.\n\n" + nfcNote,
		Parameters: []function.Parameter{
			function.StringParameter{
				Name:        "template",
				Description: "The KubeSpawner name template, e.g. \"claim-{username}--{servername}\" or \"jupyter-{user_server}\".",
				MarkdownDescription: "The KubeSpawner name template, as configured in `c.KubeSpawner.pvc_name_template` " +
					"or `pod_name_template` (the chart's `singleuser.storage.dynamic.pvcNameTemplate`), e.g. " +
					"`claim-{username}--{servername}` or `jupyter-{user_server}`.",
			},
			function.StringParameter{
				Name:                "username",
				Description:         "The JupyterHub user name, as JupyterHub stores it.",
				MarkdownDescription: "The JupyterHub user name, as JupyterHub stores it (after the authenticator's normalisation).",
			},
			function.StringParameter{
				Name:                "servername",
				Description:         "The server name: \"\" for the user's default server, the name for a named server.",
				MarkdownDescription: "The server name: `\"\"` for the user's default server, the name for a named server.",
			},
			function.StringParameter{
				Name: "slug_scheme",
				Description: "KubeSpawner's slug_scheme: \"safe\" (the default of KubeSpawner 7 and later) or \"escape\" " +
					"(KubeSpawner 6 and earlier).",
				MarkdownDescription: "KubeSpawner's `slug_scheme`: `safe` (the default of KubeSpawner 7 and later) or " +
					"`escape` (KubeSpawner 6 and earlier, or `c.KubeSpawner.slug_scheme = \"escape\"`).",
			},
		},
		Return: function.StringReturn{},
	}
}

func (f *ExpandTemplateFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var template, username, servername, schemeName string
	resp.Error = req.Arguments.Get(ctx, &template, &username, &servername, &schemeName)
	if resp.Error != nil {
		return
	}
	scheme, err := kubespawner.ParseScheme(schemeName)
	if err != nil {
		valid := make([]string, 0, len(kubespawner.Schemes()))
		for _, s := range kubespawner.Schemes() {
			valid = append(valid, fmt.Sprintf("%q", string(s)))
		}
		resp.Error = function.NewArgumentFuncError(expandArgScheme, fmt.Sprintf(
			"Unknown slug_scheme %q: valid values are %s. Use \"safe\" for KubeSpawner 7 and later (their default) "+
				"and \"escape\" for KubeSpawner 6 and earlier or deployments that set c.KubeSpawner.slug_scheme = \"escape\"",
			schemeName, strings.Join(valid, ", ")))
		return
	}
	for _, a := range []struct {
		pos         int64
		name, value string
	}{
		{expandArgTemplate, "template", template},
		{expandArgUsername, "username", username},
		{expandArgServername, "servername", servername},
	} {
		if resp.Error = checkUTF8Argument(a.pos, a.name, a.value); resp.Error != nil {
			return
		}
	}
	// Syntax and unknown fields first: they are the template's fault
	// whatever the names are.
	if err := kubespawner.ValidateTemplate(template); err != nil {
		resp.Error = function.NewArgumentFuncError(expandArgTemplate, fmt.Sprintf("Invalid %s. %s", err, templateSyntaxHint))
		return
	}
	name, err := kubespawner.Expand(template, username, servername, scheme)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(expandArgTemplate, expandErrorText(err, username, servername))
		return
	}
	resp.Error = resp.Result.Set(ctx, name)
}

// expandErrorText explains an error of a template that passed validation:
// a field that needs a value this function does not take, or a problem
// that depends on the names (e.g. an index past the end of one).
func expandErrorText(err error, username, servername string) string {
	var te *kubespawner.TemplateError
	if errors.As(err, &te) {
		for _, field := range valueFields {
			if strings.Contains(te.Reason, "{"+field+"} needs a value") {
				return fmt.Sprintf("Field {%s} cannot be rendered here: expand_template knows only the user and server "+
					"names, not the user id, the hub namespace, the namespace or the pod and claim names "+
					"({userid}, {hubnamespace}, {namespace}, {pod_name}, {pvc_name}). Use the name fields "+
					"({username}, {servername}, {user_server} and their safe_, escaped_ and unescaped_ forms), or put "+
					"the value into the template first, e.g. replace(template, \"{%s}\", \"value\")", field, field)
			}
		}
	}
	return fmt.Sprintf("Cannot expand the template for user %q and server %q: %s. %s", username, servername, err, templateSyntaxHint)
}
