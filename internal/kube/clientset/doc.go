// Package clientset adapts client-go's full typed clientset to kube.API, for
// the bench, which holds one already. The provider itself
// uses kube.NewAPI and does not link the full clientset.
package clientset
