package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// fnCase is one provider-function call in an acceptance test: the output
// named out holds call, which must evaluate to want.
type fnCase struct {
	out, call, want string
}

// fnQuote returns s as an HCL string literal. Interpolation and directive
// openers are doubled so that templates such as "{username}" stay literal.
func fnQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case (r == '$' || r == '%') && strings.HasPrefix(s[i+1:], "{"):
			b.WriteRune(r)
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// fnCall is an HCL call of provider::jupyter::<name> with string arguments.
func fnCall(name string, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fnQuote(a)
	}
	return fmt.Sprintf("provider::jupyter::%s(%s)", name, strings.Join(quoted, ", "))
}

// fnStep is a test step whose configuration has one output per case. Each
// output must be known at plan time (functions run during planning) and
// equal the expected value after apply.
func fnStep(t *testing.T, cases []fnCase) resource.TestStep {
	t.Helper()
	var body strings.Builder
	var planChecks []plancheck.PlanCheck
	var stateChecks []statecheck.StateCheck
	for _, c := range cases {
		fmt.Fprintf(&body, "output %q {\n  value = %s\n}\n", c.out, c.call)
		planChecks = append(planChecks, plancheck.ExpectKnownOutputValue(c.out, knownvalue.StringExact(c.want)))
		stateChecks = append(stateChecks, statecheck.ExpectKnownOutputValue(c.out, knownvalue.StringExact(c.want)))
	}
	return resource.TestStep{
		Config:            acctest.Config(acctest.ProviderBlock(acctest.Cluster(t), acctest.Cluster(t).AdminToken), body.String()),
		ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: planChecks},
		ConfigStateChecks: stateChecks,
	}
}

// fnErrorStep is a test step whose single output calls a function that
// must fail with an error matching re. OpenTofu wraps diagnostics, so every
// space in re matches any run of white space, line breaks included.
func fnErrorStep(t *testing.T, call string, re string) resource.TestStep {
	t.Helper()
	return resource.TestStep{
		Config:      acctest.AdminConfig(t, fmt.Sprintf("output \"failing\" {\n  value = %s\n}\n", call)),
		ExpectError: regexp.MustCompile("(?s)" + strings.ReplaceAll(re, " ", `\s+`)),
	}
}

// runFunction calls f through the framework's request and response types,
// as the provider server does, and returns the string result or the error.
func runFunction(t *testing.T, f function.Function, args ...string) (string, *function.FuncError) {
	t.Helper()
	ctx := context.Background()
	var def function.DefinitionResponse
	f.Definition(ctx, function.DefinitionRequest{}, &def)
	if len(def.Definition.Parameters) != len(args) {
		t.Fatalf("function takes %d arguments, test gives %d", len(def.Definition.Parameters), len(args))
	}
	values := make([]attr.Value, len(args))
	for i, a := range args {
		values[i] = types.StringValue(a)
	}
	resp := function.RunResponse{Result: function.NewResultData(types.StringUnknown())}
	f.Run(ctx, function.RunRequest{Arguments: function.NewArgumentsData(values)}, &resp)
	if resp.Error != nil {
		return "", resp.Error
	}
	s, ok := resp.Result.Value().(types.String)
	if !ok || s.IsUnknown() || s.IsNull() {
		t.Fatalf("result is %v, want a known string", resp.Result.Value())
	}
	return s.ValueString(), nil
}

// checkDefinition validates a function's definition as GetProviderSchema
// does and checks that it is documented.
func checkDefinition(t *testing.T, f function.Function, name string) {
	t.Helper()
	ctx := context.Background()
	var meta function.MetadataResponse
	f.Metadata(ctx, function.MetadataRequest{}, &meta)
	if meta.Name != name {
		t.Errorf("name = %q, want %q", meta.Name, name)
	}
	var def function.DefinitionResponse
	f.Definition(ctx, function.DefinitionRequest{}, &def)
	var vr function.DefinitionValidateResponse
	def.Definition.ValidateImplementation(ctx, function.DefinitionValidateRequest{FuncName: name}, &vr)
	if vr.Diagnostics.HasError() {
		t.Errorf("invalid definition: %v", vr.Diagnostics)
	}
	d := def.Definition
	if d.Summary == "" || d.Description == "" || d.MarkdownDescription == "" {
		t.Error("summary, description and markdown description must be set")
	}
	for i, p := range d.Parameters {
		if p.GetName() == "" || p.GetDescription() == "" || p.GetMarkdownDescription() == "" {
			t.Errorf("parameter %d: name and descriptions must be set", i)
		}
	}
}

// wantArgError checks that err is an error about argument pos whose text
// contains every fragment.
func wantArgError(t *testing.T, err *function.FuncError, pos int64, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("no error; want one about argument %d", pos)
		return
	}
	if err.FunctionArgument == nil || *err.FunctionArgument != pos {
		t.Errorf("error %q points at argument %v; want %d", err.Text, err.FunctionArgument, pos)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Text, f) {
			t.Errorf("error %q does not mention %q", err.Text, f)
		}
	}
}

func TestFunctionSafeSlug_unit(t *testing.T) {
	f := NewSafeSlugFunction()
	checkDefinition(t, f, "safe_slug")
	for _, tc := range []struct{ in, want string }{
		{"jupyter-alex", "jupyter-alex"},
		{"Alice", "alice---3bc51062"},
		{"user@email.com", "user-email-com---0925f997"},
		{strings.Repeat("x", 63), strings.Repeat("x", 63)},
		{strings.Repeat("x", 64), "xxxxxxxxxxxxxxxxxxxxx---7ce10097"},
		{"", "x---e3b0c442"},
		// Without OpenTofu's NFC normalisation the KELVIN SIGN is hashed
		// as KubeSpawner hashes it.
		{"\u212aelvin", "kelvin---4a274a98"},
	} {
		got, err := runFunction(t, f, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("safe_slug(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	_, err := runFunction(t, f, "bad\xff")
	wantArgError(t, err, 0, "value", "not valid UTF-8")
}

func TestAccFunctionSafeSlug(t *testing.T) {
	long := "a-very-long-name-that-is-too-long-for-sixty-four-character-labels"
	cases := []fnCase{
		// Valid object names pass unchanged.
		{"valid", fnCall("safe_slug", "jupyter-alex"), "jupyter-alex"},
		{"short", fnCall("safe_slug", "z9"), "z9"},
		{"max_length", fnCall("safe_slug", strings.Repeat("x", 63)), strings.Repeat("x", 63)},
		// Upper case is not allowed in names: hashed.
		{"upper", fnCall("safe_slug", "jupyter-Alex"), "jupyter-alex---3a1c285c"},
		{"alice", fnCall("safe_slug", "Alice"), "alice---3bc51062"},
		// E-mail addresses and dots.
		{"email", fnCall("safe_slug", "user@email.com"), "user-email-com---0925f997"},
		{"email_mixed", fnCall("safe_slug", "user-_@_emailß.com"), "user-email-com---7e3a7efd"},
		{"dot", fnCall("safe_slug", "has.dot"), "has-dot---03e27fdf"},
		// Unicode: Python lowercasing, and the hash of the UTF-8 bytes.
		{"unicode", fnCall("safe_slug", "jupyter-üni"), "jupyter-ni---a5aaf5dd"},
		{"unicode_start", fnCall("safe_slug", "üser"), "ser---73506260"},
		{"dotted_capital_i", fnCall("safe_slug", "\u0130x"), "i-x---3020b9f2"},
		// OpenTofu normalises strings to NFC, which turns the KELVIN SIGN
		// into an ASCII K: the function sees "Kelvin", not what
		// KubeSpawner would hash ("kelvin---4a274a98", see the unit test).
		{"kelvin_nfc", fnCall("safe_slug", "\u212aelvin"), "kelvin---000dc6cd"},
		{"kelvin_ascii", fnCall("safe_slug", "Kelvin"), "kelvin---000dc6cd"},
		// Start and end rules.
		{"trailing_dash", fnCall("safe_slug", "endswith-"), "endswith---165f1166"},
		{"leading_dash", fnCall("safe_slug", "-start"), "start---f587e2dc"},
		{"leading_digit", fnCall("safe_slug", "9z9"), "x-9z9---224de202"},
		// "--" is always hashed, even in an otherwise valid name.
		{"double_dash", fnCall("safe_slug", "username--servername"), "username-servername---d957f1de"},
		{"slug_of_slug", fnCall("safe_slug", "start---f587e2dc"), "start-f587e2dc---cc5bb9c9"},
		// Longer than 63 characters: hashed to at most 32.
		{"too_long", fnCall("safe_slug", strings.Repeat("x", 64)), "xxxxxxxxxxxxxxxxxxxxx---7ce10097"},
		{"too_long_65", fnCall("safe_slug", strings.Repeat("x", 65)), "xxxxxxxxxxxxxxxxxxxxx---9537c5fd"},
		{"long_name", fnCall("safe_slug", long), "a-very-long-name-that---29ac5fd2"},
		{"empty", fnCall("safe_slug", ""), "x---e3b0c442"},
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			fnStep(t, cases),
			// A null argument is refused by OpenTofu before the call.
			fnErrorStep(t, "provider::jupyter::safe_slug(null)", `Invalid function argument.*must not be null`),
		},
	})
}
