package claims

// Finding is a diagnostic of a decision core (the plan, the hub's
// configuration), which the Terraform layer shows at its attribute: the attribute it is about (a path such as
// "migration" or "profile_options[0].choices[\"gpu\"]"), a summary and a
// detail that says what, who, why and how to proceed.
type Finding struct {
	Attribute string
	Summary   string
	Detail    string
}
