package safety

import (
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

func TestPlanTruncatesLists(t *testing.T) {
	many := users("user", 25)
	first, rest := many[:ListLimit], many[ListLimit:]
	var listed, notListed []string
	for _, u := range first {
		listed = append(listed, u+": "+home(t, u))
	}
	for _, u := range rest {
		notListed = append(notListed, u+":")
	}
	live := Live{Claims: pvcs(t, many)}
	runPlanCases(t, []planCase{
		{
			name:    "fail lists the first 20 of 25",
			cfg:     cfg(many, mode(claims.RWX)),
			live:    live,
			class:   ClassNone,
			actions: allAction(many, ActionLegacy),
			legacy:  many, colocation: true,
			errors: []want{{attr: "access_mode",
				has:    append([]string{"25 existing home claim(s)", "... and 5 more (25 in all)"}, listed...),
				hasNot: notListed}},
		},
		{
			name:    "recreate without allow_data_loss lists the first 20 of 25",
			cfg:     cfg(many, mode(claims.RWX), onChange(OnModeChangeRecreate)),
			live:    live,
			class:   ClassNone,
			actions: allAction(many, ActionLegacy),
			legacy:  many, colocation: true,
			errors: []want{{attr: "allow_data_loss",
				has:    append([]string{"recreate 25 home claim(s)", "... and 5 more (25 in all)"}, listed...),
				hasNot: notListed}},
		},
		{
			name:    "mounted claims list the first 20 of 25",
			cfg:     cfg(many, mode(claims.RWX), onChange(OnModeChangeRecreate), dataLoss()),
			live:    Live{Claims: live.Claims, Mounted: mountedAll(t, many)},
			class:   ClassNone,
			actions: allAction(many, ActionRecreate),
			errors: []want{{attr: "on_mode_change",
				has:    append([]string{"... and 5 more (25 in all)"}, listed...),
				hasNot: notListed}},
		},
		{
			name:       "template change lists the first 20 of 25 orphaned homes",
			cfg:        cfg(nil, template("home-{username}")),
			prior:      prior(t, cfg(nil)),
			live:       live,
			class:      ClassNone,
			colocation: true,
			errors: []want{{attr: "pvc_name_template",
				has:    append([]string{"25 home claim(s)", "... and 5 more"}, "user00: has claim-user00, the template gives home-user00", "user19: has claim-user19"),
				hasNot: []string{"user20", "user24"}}},
		},
	})
}

func allAction(us []string, a Action) map[string]Action {
	out := map[string]Action{}
	for _, u := range us {
		out[u] = a
	}
	return out
}
