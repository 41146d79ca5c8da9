// Package migration moves a user's home claim to another access mode
// without losing data. It is pure: it chooses the method for a claim and,
// from what is observed in the cluster, the next step of a migration. The
// executor runs the steps (internal/execute: rebind.go, copy.go).
//
// Rebind (zero copy) serves the same volume in the new mode:
//
//	pending   the claim is bound to its volume in the old mode
//	retained  the volume's reclaim policy is Retain (the old one is recorded)
//	released  the old claim is deleted and, at once, the new claim created:
//	          same name, labels and annotations, new mode, volumeName = that
//	          volume (Pending: the volume still names the old claim); then
//	          the volume is given to it (claimRef = the new claim's UID) in
//	          the new access mode
//	rebound   the new claim is Bound
//	done      the reclaim policy is restored and the record removed
//
// The new claim is created right after the old one is gone, before the PV
// binder releases the volume: a user whose server starts during the rebind
// finds the claim (KubeSpawner then mounts it and the pod waits until it is
// bound to the home's volume) rather than no claim, for which KubeSpawner
// would create a new, empty one. What is left is the moment between the old
// claim's removal and the create; a claim someone else created in it is
// never touched, and the rebind stops naming it and the volume.
//
// The record of a migration lives in an annotation on the volume (it
// outlives the claim), so an apply stopped at any point resumes where it
// stopped, and no step is repeated: every step is decided from what the
// cluster shows, never from memory. No step deletes a volume; the claim is
// deleted only once the volume is retained.
package migration
