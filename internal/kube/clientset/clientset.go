package clientset

import (
	"k8s.io/client-go/kubernetes"
	batchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	storagev1 "k8s.io/client-go/kubernetes/typed/storage/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
)

// API is cs as a kube.API.
func API(cs kubernetes.Interface) kube.API { return api{cs} }

// NewClient is kube.NewClient over cs.
func NewClient(cs kubernetes.Interface) *kube.Client { return kube.NewClient(API(cs)) }

type api struct{ cs kubernetes.Interface }

func (a api) CoreV1() kube.CoreV1       { return core{a.cs.CoreV1()} }
func (a api) StorageV1() kube.StorageV1 { return storage{a.cs.StorageV1()} }
func (a api) BatchV1() kube.BatchV1     { return batch{a.cs.BatchV1()} }

type core struct{ c corev1.CoreV1Interface }

func (c core) PersistentVolumeClaims(ns string) kube.Claims { return c.c.PersistentVolumeClaims(ns) }
func (c core) PersistentVolumes() kube.Volumes              { return c.c.PersistentVolumes() }
func (c core) Pods(ns string) kube.Pods                     { return c.c.Pods(ns) }
func (c core) ConfigMaps(ns string) kube.ConfigMaps         { return c.c.ConfigMaps(ns) }
func (c core) Nodes() kube.Nodes                            { return c.c.Nodes() }
func (c core) Namespaces() kube.Namespaces                  { return c.c.Namespaces() }

type storage struct{ c storagev1.StorageV1Interface }

func (s storage) StorageClasses() kube.StorageClasses { return s.c.StorageClasses() }

type batch struct{ c batchv1.BatchV1Interface }

func (b batch) Jobs(ns string) kube.Jobs { return b.c.Jobs(ns) }
