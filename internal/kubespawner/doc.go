// Package kubespawner reproduces, bit for bit, the way KubeSpawner names the
// Kubernetes objects it creates for JupyterHub users: pod and PVC names, the
// template fields of pod_name_template / pvc_name_template and friends, and
// the hub.jupyter.org/* labels and annotations.
//
// The reference implementation is the Python project jupyterhub/kubespawner,
// version 7.0.0 or later (checked against 7.1.x):
//
//   - kubespawner/slugs.py: the "safe" slug scheme (SafeSlug, StripAndHash,
//     MultiSlug, ExtractSafeName), the validity predicates
//     (IsValidObjectName, IsValidLabel) and the legacy "escape" scheme
//     (EscapeSlug, which wraps the escapism package);
//   - kubespawner/spawner.py, KubeSpawner._expand_user_properties: the
//     template fields and Python str.format expansion (Expand, ExpandValues),
//     and _build_common_labels / _build_common_annotations / get_pvc_manifest
//     for the labels and annotations (PVCLabels, PVCAnnotations).
//
// Upstream lives at https://github.com/jupyterhub/kubespawner; its tests
// tests/test_slugs.py and tests/test_spawner.py and the table in
// docs/source/templates.md are carried as table tests in this package.
//
// # Fidelity notes
//
// Python semantics are reproduced where Go's differ:
//
//   - lengths count code points (Python len), not bytes;
//   - lowercasing follows Python's str.lower (full case mapping, so U+0130
//     becomes "i\u0307", and the Final_Sigma rule), see PyLower. The case
//     tables are Go's unicode package (Unicode 15.0.0), which is the database
//     of Python 3.12 (3.13 has 15.1.0, which changed no case mappings);
//   - slicing with a negative stop (s[:n] with n < 0) behaves as in Python,
//     which matters for tiny max lengths;
//   - floor division for the per-name budget of MultiSlug;
//   - the label pattern of is_valid_label is compiled with re.IGNORECASE in
//     upstream, which lets four non-ASCII letters through (see IsValidLabel);
//   - templates are expanded with Python str.format rules: {{ and }}
//     escapes, conversions (!s, !r, !a), indexing ([n]) and the format-spec
//     mini-language for str and int values, with Python's error cases.
//
// The SHA-256 hashes are taken over the original UTF-8 bytes of the input.
// JupyterHub names are Python str values and therefore always valid Unicode;
// functions here that hash or expand names reject invalid UTF-8 with an
// error instead of guessing.
package kubespawner
