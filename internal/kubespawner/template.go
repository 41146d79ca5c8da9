package kubespawner

import (
	"fmt"
	"sort"
	"strings"
)

// Default and historical name templates.
const (
	// DefaultPodNameTemplate is KubeSpawner's pod_name_template default.
	DefaultPodNameTemplate = "jupyter-{user_server}"
	// DefaultPVCNameTemplate is KubeSpawner's pvc_name_template default
	// since KubeSpawner 7.
	DefaultPVCNameTemplate = "claim-{user_server}"
	// LegacyPVCNameTemplate is the pvc_name_template default of
	// KubeSpawner <= 6.
	LegacyPVCNameTemplate = "claim-{username}--{servername}"
	// Z2JHLegacyPVCNameTemplate is the pvcNameTemplate default of the
	// zero-to-jupyterhub chart up to version 3.
	Z2JHLegacyPVCNameTemplate = "claim-{username}{servername}"
	// DefaultUserNamespaceTemplate is KubeSpawner's user_namespace_template
	// default, used when enable_user_namespaces is set.
	DefaultUserNamespaceTemplate = "{hubnamespace}-{username}"
)

// Template field names, as written between braces.
const (
	FieldUsername            = "username"
	FieldServername          = "servername"
	FieldUserServer          = "user_server"
	FieldUnescapedUsername   = "unescaped_username"
	FieldUnescapedServername = "unescaped_servername"
	FieldSafeUsername        = "safe_username"
	FieldSafeServername      = "safe_servername"
	FieldSafeUserServer      = "safe_user_server"
	FieldEscapedUsername     = "escaped_username"
	FieldEscapedServername   = "escaped_servername"
	FieldEscapedUserServer   = "escaped_user_server"
	FieldUserID              = "userid"
	FieldHubNamespace        = "hubnamespace"
	FieldPodName             = "pod_name"
	FieldPVCName             = "pvc_name"
	FieldNamespace           = "namespace"
)

// FieldNames returns the names of all fields KubeSpawner's
// _expand_user_properties offers to templates, sorted.
//
// {userid}, {hubnamespace}, {namespace}, {pod_name} and {pvc_name} need
// values beyond the user and server names; see Values.
func FieldNames() []string {
	names := []string{
		FieldUsername, FieldServername, FieldUserServer,
		FieldUnescapedUsername, FieldUnescapedServername,
		FieldSafeUsername, FieldSafeServername, FieldSafeUserServer,
		FieldEscapedUsername, FieldEscapedServername, FieldEscapedUserServer,
		FieldUserID, FieldHubNamespace, FieldPodName, FieldPVCName, FieldNamespace,
	}
	sort.Strings(names)
	return names
}

// UnavailableValue is what KubeSpawner renders for {pod_name}, {pvc_name}
// or {namespace} while that attribute is not yet computed, e.g. {pvc_name}
// inside pvc_name_template: "pvc_name_unavailable!".
func UnavailableValue(field string) string { return field + "_unavailable!" }

// Values are the inputs of a template expansion. Username and Servername
// (empty for the default server) are always available; the other fields
// are optional and a template that uses an absent one fails with an error
// naming the field.
type Values struct {
	Username   string
	Servername string
	// UserID is the JupyterHub user id, for {userid}.
	UserID *int64
	// HubNamespace is the hub's namespace, for {hubnamespace}. As upstream,
	// the namespace "default" renders as "user".
	HubNamespace *string
	// Namespace is the namespace of the user's server, for {namespace}.
	Namespace *string
	// PodName and PVCName are the resolved names, for {pod_name} and
	// {pvc_name}. Use UnavailableValue to reproduce upstream's rendering
	// before they are computed (ResolveNames does this).
	PodName *string
	PVCName *string
}

// TemplateError reports a template that cannot be expanded: malformed
// syntax, an unknown field, a field whose value was not given, or a format
// spec that cannot be honoured.
type TemplateError struct {
	Template string // the whole template
	Text     string // the offending field or text, when known
	Reason   string
}

func (e *TemplateError) Error() string {
	return fmt.Sprintf("template %q: %s", e.Template, e.Reason)
}

// UserFields are the name-derived template fields for one user server.
type UserFields struct {
	SafeUsername      string // safe_slug(username, max_length=48)
	SafeServername    string // safe_slug(servername, max_length=48), "" for the default server
	SafeUserServer    string // see Expand
	EscapedUsername   string // EscapeSlug(username)
	EscapedServername string // EscapeSlug(servername)
	// EscapedUserServer is escaped_username + "--" + escaped_servername,
	// with the trailing "--" kept for the default server, exactly as the
	// {escaped_user_server} field value (the final strip of trailing '-'
	// applies to the whole rendered template only).
	EscapedUserServer string
}

// ComputeUserFields computes the name-derived fields the way
// _expand_user_properties does.
//
// {user_server} under the safe scheme is username--servername (or just the
// username for the default server) unless
// len(safe_username) + len(safe_servername) + 2 > 48, in which case it is
// MultiSlug([username, servername], 48). The +2 counts even for the default
// server, so a valid 47- or 48-character username on its default server gets
// a hashed {user_server}.
func ComputeUserFields(username, servername string) (UserFields, error) {
	if err := checkUTF8("username", username); err != nil {
		return UserFields{}, err
	}
	if err := checkUTF8("server name", servername); err != nil {
		return UserFields{}, err
	}
	var uf UserFields
	var err error
	if uf.SafeUsername, err = SafeSlug(username, IsValidObjectName, TemplateMaxLength); err != nil {
		return UserFields{}, err
	}
	if servername != "" {
		if uf.SafeServername, err = SafeSlug(servername, IsValidObjectName, TemplateMaxLength); err != nil {
			return UserFields{}, err
		}
	}
	switch {
	case len(uf.SafeUsername)+len(uf.SafeServername)+2 > TemplateMaxLength:
		if uf.SafeUserServer, err = MultiSlug([]string{username, servername}, TemplateMaxLength); err != nil {
			return UserFields{}, err
		}
	case servername != "":
		uf.SafeUserServer = uf.SafeUsername + "--" + uf.SafeServername
	default:
		uf.SafeUserServer = uf.SafeUsername
	}
	uf.EscapedUsername = EscapeSlug(username)
	uf.EscapedServername = EscapeSlug(servername)
	uf.EscapedUserServer = uf.EscapedUsername + "--" + uf.EscapedServername
	return uf, nil
}

// Expand renders a KubeSpawner template for a user server, exactly as
// KubeSpawner._expand_user_properties does, with only the name fields
// available. It is ExpandValues(template, Values{Username: username,
// Servername: servername}, scheme); servername is "" for the default server.
func Expand(template, username, servername string, scheme Scheme) (string, error) {
	return ExpandValues(template, Values{Username: username, Servername: servername}, scheme)
}

// ExpandValues renders a KubeSpawner template.
//
// The template is formatted with Python str.format rules ({{ and }} for
// literal braces; !s, !r and !a conversions; [n] indexing; format specs for
// strings and for {userid}). The fields are:
//
//	{username} {servername} {user_server}   per scheme (safe or escape)
//	{safe_username} {safe_servername} {safe_user_server}
//	{escaped_username} {escaped_servername} {escaped_user_server}
//	{unescaped_username} {unescaped_servername}   the raw names
//	{userid} {hubnamespace} {namespace} {pod_name} {pvc_name}   from Values
//
// Under the escape scheme {user_server} is escaped_username--escaped_servername,
// or just escaped_username for the default server.
//
// After formatting, trailing '-' characters are stripped from the result
// unless the template itself ends with '-'. That is how
// "claim-{username}--{servername}" becomes "claim-alice" for a default
// server, while "{unescaped_username}-" keeps its hyphen.
//
// The empty scheme means DefaultScheme. Errors are *TemplateError values
// for template problems, plain errors for invalid UTF-8 names.
func ExpandValues(template string, v Values, scheme Scheme) (string, error) {
	scheme, userFields, err := prepareExpansion(template, v, scheme)
	if err != nil {
		return "", err
	}
	if out, ok := expandPlain(template, v, scheme, userFields); ok {
		return out, nil
	}
	return expandFormatted(template, v, scheme, userFields)
}

// expandWithFormatter is ExpandValues without the shortcut for plain
// templates (see plainTemplate): every template goes through the
// formatter. Both give the same names (TestPlainTemplatesAgreeWithTheFormatter,
// FuzzNames).
func expandWithFormatter(template string, v Values, scheme Scheme) (string, error) {
	scheme, userFields, err := prepareExpansion(template, v, scheme)
	if err != nil {
		return "", err
	}
	return expandFormatted(template, v, scheme, userFields)
}

// prepareExpansion checks the scheme (the empty scheme means
// DefaultScheme) and the template and names for valid UTF-8, and returns
// the scheme with the name-derived fields, computed on first use: most
// templates use one or two of them, and a plan expands a template once per
// claim. ComputeUserFields fails only on invalid UTF-8, checked here up
// front.
func prepareExpansion(template string, v Values, scheme Scheme) (Scheme, func() (*UserFields, error), error) {
	if scheme == "" {
		scheme = DefaultScheme
	}
	if scheme != SchemeSafe && scheme != SchemeEscape {
		_, err := ParseScheme(string(scheme))
		return "", nil, err
	}
	if err := checkUTF8("template", template); err != nil {
		return "", nil, err
	}
	if err := checkUTF8("username", v.Username); err != nil {
		return "", nil, err
	}
	if err := checkUTF8("server name", v.Servername); err != nil {
		return "", nil, err
	}
	var uf *UserFields
	userFields := func() (*UserFields, error) {
		if uf == nil {
			u, err := ComputeUserFields(v.Username, v.Servername)
			if err != nil {
				return nil, err
			}
			uf = &u
		}
		return uf, nil
	}
	return scheme, userFields, nil
}

// expandFormatted formats template with the formatter, the fields looked
// up in v under scheme, and trims the hyphens.
func expandFormatted(template string, v Values, scheme Scheme, userFields func() (*UserFields, error)) (string, error) {
	f := &formatter{lookup: func(name string) (pyValue, error) {
		if val, ok, err := optionalField(name, v); ok || err != nil {
			return val, err
		}
		s, ok, err := userField(name, v, scheme, userFields)
		if err != nil {
			return pyValue{}, err
		}
		if !ok {
			return pyValue{}, unknownField(name)
		}
		return strValue(s), nil
	}}
	rendered, err := f.expandFormat(template)
	if err != nil {
		return "", withTemplate(err, template)
	}
	return trimHyphens(template, rendered), nil
}

// optionalField is the value of a field given in Values ({userid},
// {hubnamespace}, {namespace}, {pod_name}, {pvc_name}); ok is false for a
// name that is not one. {hubnamespace} is "user" for the namespace
// "default", as in KubeSpawner.
func optionalField(name string, v Values) (pyValue, bool, error) {
	switch name {
	case FieldUserID:
		if v.UserID == nil {
			return pyValue{}, true, missingValue(name, "Values.UserID")
		}
		return pyValue{isInt: true, i: *v.UserID}, true, nil
	case FieldHubNamespace:
		if v.HubNamespace == nil {
			return pyValue{}, true, missingValue(name, optionalSource[name])
		}
		if *v.HubNamespace == "default" {
			return strValue("user"), true, nil
		}
		return strValue(*v.HubNamespace), true, nil
	case FieldNamespace, FieldPodName, FieldPVCName:
		p := map[string]*string{FieldNamespace: v.Namespace, FieldPodName: v.PodName, FieldPVCName: v.PVCName}[name]
		if p == nil {
			return pyValue{}, true, missingValue(name, optionalSource[name])
		}
		return strValue(*p), true, nil
	}
	return pyValue{}, false, nil
}

// trimHyphens is KubeSpawner's last step of an expansion: trailing '-' are
// removed from the name unless the template itself ends in one.
func trimHyphens(template, rendered string) string {
	if !strings.HasSuffix(template, "-") {
		return strings.TrimRight(rendered, "-")
	}
	return rendered
}

// userField is the value of a name field (the raw names, and those derived
// from them) under scheme; ok is false for a name that is not one.
func userField(name string, v Values, scheme Scheme, fields func() (*UserFields, error)) (string, bool, error) {
	switch name {
	case FieldUnescapedUsername:
		return v.Username, true, nil
	case FieldUnescapedServername:
		return v.Servername, true, nil
	case FieldSafeUsername, FieldSafeServername, FieldSafeUserServer,
		FieldEscapedUsername, FieldEscapedServername, FieldEscapedUserServer,
		FieldUsername, FieldServername, FieldUserServer:
	default:
		return "", false, nil
	}
	uf, err := fields()
	if err != nil {
		return "", false, err
	}
	if scheme == SchemeEscape {
		switch name {
		case FieldUsername:
			return uf.EscapedUsername, true, nil
		case FieldServername:
			return uf.EscapedServername, true, nil
		case FieldUserServer:
			if v.Servername != "" {
				return uf.EscapedUsername + "--" + uf.EscapedServername, true, nil
			}
			return uf.EscapedUsername, true, nil
		}
	}
	switch name {
	case FieldSafeUsername, FieldUsername:
		return uf.SafeUsername, true, nil
	case FieldSafeServername, FieldServername:
		return uf.SafeServername, true, nil
	case FieldSafeUserServer, FieldUserServer:
		return uf.SafeUserServer, true, nil
	case FieldEscapedUsername:
		return uf.EscapedUsername, true, nil
	case FieldEscapedServername:
		return uf.EscapedServername, true, nil
	}
	return uf.EscapedUserServer, true, nil
}

var optionalSource = map[string]string{
	FieldHubNamespace: "Values.HubNamespace",
	FieldNamespace:    "Values.Namespace",
	FieldPodName:      "Values.PodName",
	FieldPVCName:      "Values.PVCName",
}

func missingValue(name, source string) error {
	return &TemplateError{
		Text:   "{" + name + "}",
		Reason: fmt.Sprintf("field {%s} needs a value that was not given (%s)", name, source),
	}
}

func unknownField(name string) error {
	return &TemplateError{
		Text:   "{" + name + "}",
		Reason: fmt.Sprintf("unknown field {%s}; known fields are %s", name, knownFieldList()),
	}
}

func knownFieldList() string {
	names := FieldNames()
	for i, n := range names {
		names[i] = "{" + n + "}"
	}
	return strings.Join(names, ", ")
}

func withTemplate(err error, template string) error {
	if te, ok := err.(*TemplateError); ok {
		te.Template = template
	}
	return err
}

// ValidateTemplate checks a template without user names: its syntax, that
// every field is one KubeSpawner knows, and, where they do not depend on
// values, indexes, conversions and format specs. It accepts the optional
// fields ({userid}, {pod_name}, ...) even though expanding them needs
// values. Errors are *TemplateError values naming the offending text.
//
// Checks that depend on values (an index past the end of a name, a format
// spec built from nested fields) are left to expansion.
func ValidateTemplate(template string) error {
	if err := checkUTF8("template", template); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, n := range FieldNames() {
		known[n] = true
	}
	f := &formatter{validate: true, lookup: func(name string) (pyValue, error) {
		if !known[name] {
			return pyValue{}, unknownField(name)
		}
		if name == FieldUserID {
			return pyValue{isInt: true}, nil
		}
		return strValue("x"), nil
	}}
	if _, err := f.expandFormat(template); err != nil {
		return withTemplate(err, template)
	}
	return nil
}

// ResolveNames computes the pod and PVC names the way KubeSpawner's
// constructor does: pod_name first, while {pod_name} and {pvc_name} still
// render as "pod_name_unavailable!" / "pvc_name_unavailable!", then
// pvc_name with {pod_name} resolved. v.PodName and v.PVCName are ignored;
// v.Namespace and the other optional values are used as given.
//
// With remember_pvc_name (the default), KubeSpawner keeps the PVC name in
// its state once the claim exists, so later template or scheme changes do
// not rename an existing claim; this function computes the name a new
// server would get.
func ResolveNames(v Values, podNameTemplate, pvcNameTemplate string, scheme Scheme) (podName, pvcName string, err error) {
	podUnavailable := UnavailableValue(FieldPodName)
	pvcUnavailable := UnavailableValue(FieldPVCName)
	v.PodName, v.PVCName = &podUnavailable, &pvcUnavailable
	podName, err = ExpandValues(podNameTemplate, v, scheme)
	if err != nil {
		return "", "", err
	}
	v.PodName = &podName
	pvcName, err = ExpandValues(pvcNameTemplate, v, scheme)
	if err != nil {
		return "", "", err
	}
	return podName, pvcName, nil
}
