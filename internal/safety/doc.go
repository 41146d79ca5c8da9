// Package safety decides, for jupyter_home_storage, what a plan does to
// every user's home claim and whether that is safe or destructive.
//
// It is pure: given the configuration, the prior state and the live claims
// (read once by the caller), Plan returns one action per user, the
// diagnostics a person reading the plan needs, and the change class.
// "Why is this change destructive?" is answered in this file: only
// ActionRecreate (Plan) and deleting managed claims on destroy (Destroy)
// lose data, and both require AllowDataLoss. ActionMigrate (on_mode_change =
// "migrate") deletes a claim object too, but only after its volume is
// retained, and binds the same volume to the new claim: no data is lost, so
// it is safe (the steps are in internal/migration). After a copy, deleting
// the source claim (ActionDeleteSource) loses the old data: destructive,
// and only with migration.delete_copied_sources and AllowDataLoss.
//
// A plan only proposes: changes.go is what it shows and apply compares
// (Changes, Reconcile), and gate.go decides, right before each step, whether
// a step that deletes a claim or copies into one may run (Gate).
package safety
