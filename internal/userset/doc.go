// Package userset reads and writes jupyter_home_storage's users: one JSON
// object from each JupyterHub username to {}, as OpenTofu's jsonencode
// writes it (users = jsonencode({ for u in var.users : u => {} })), and
// legacy_users: one JSON object from each legacy user to its claim names.
//
// One string rather than a map, list or set attribute because of plan time
// at tens of thousands of users: OpenTofu and terraform-plugin-framework
// convert, walk and diff a collection element by element in every request
// (a list or set in time that grows with the square of its length), while a
// string is passed through whole; OpenTofu still renders a change of a JSON
// string key by key. DESIGN.md and BENCHMARKS.md have the measurements.
package userset
