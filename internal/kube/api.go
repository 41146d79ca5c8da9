package kube

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// API is the part of the Kubernetes API the provider uses, in the shape of
// client-go's typed clientset (c.CoreV1().PersistentVolumeClaims(ns).List…).
//
// NewAPI serves it with REST clients that know only the three API groups the
// provider reads and writes. client-go's full clientset registers every API
// group of Kubernetes when the process starts, and OpenTofu starts the
// provider three or four times per command (DESIGN.md's Cost at scale has
// what a start costs with each; BENCHMARKS.md the starts of a command).
// The bench, which holds a full clientset, adapts it with package kube/clientset.
type API interface {
	CoreV1() CoreV1
	StorageV1() StorageV1
	BatchV1() BatchV1
}

// CoreV1 is the core group's resources the provider uses.
type CoreV1 interface {
	PersistentVolumeClaims(namespace string) Claims
	PersistentVolumes() Volumes
	Pods(namespace string) Pods
	ConfigMaps(namespace string) ConfigMaps
	Nodes() Nodes
	Namespaces() Namespaces
}

// StorageV1 is the storage group's resources the provider uses.
type StorageV1 interface {
	StorageClasses() StorageClasses
}

// BatchV1 is the batch group's resources the provider uses.
type BatchV1 interface {
	Jobs(namespace string) Jobs
}

// Claims are the calls the provider makes on PersistentVolumeClaims.
type Claims interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolumeClaim, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PersistentVolumeClaimList, error)
	Create(ctx context.Context, pvc *corev1.PersistentVolumeClaim, opts metav1.CreateOptions) (*corev1.PersistentVolumeClaim, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.PersistentVolumeClaim, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Volumes are the calls the provider makes on PersistentVolumes.
type Volumes interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolume, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PersistentVolumeList, error)
	Create(ctx context.Context, pv *corev1.PersistentVolume, opts metav1.CreateOptions) (*corev1.PersistentVolume, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.PersistentVolume, error)
}

// Pods are the calls the provider makes on Pods.
type Pods interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
}

// ConfigMaps are the calls the provider makes on ConfigMaps.
type ConfigMaps interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
	Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
	Update(ctx context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Nodes are the calls the provider makes on Nodes.
type Nodes interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
}

// Namespaces are the calls the provider makes on Namespaces.
type Namespaces interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Namespace, error)
}

// StorageClasses are the calls the provider makes on StorageClasses.
type StorageClasses interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*storagev1.StorageClass, error)
	List(ctx context.Context, opts metav1.ListOptions) (*storagev1.StorageClassList, error)
	Create(ctx context.Context, sc *storagev1.StorageClass, opts metav1.CreateOptions) (*storagev1.StorageClass, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*storagev1.StorageClass, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Jobs are the calls the provider makes on Jobs.
type Jobs interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*batchv1.Job, error)
	Create(ctx context.Context, job *batchv1.Job, opts metav1.CreateOptions) (*batchv1.Job, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// scheme knows the provider's three API groups and the meta options.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, storagev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

var (
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
)

// NewAPI is the API over rc, with REST clients for the core, storage and
// batch groups that share rc's transport and rate limiter.
func NewAPI(rc *rest.Config) (API, error) {
	httpClient, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	if rc.RateLimiter == nil && rc.QPS > 0 {
		if rc.Burst <= 0 {
			return nil, fmt.Errorf("burst must be at least 1 when qps is set (got %d)", rc.Burst)
		}
		// One limiter for the three groups, as one clientset has.
		c := *rc
		rc = &c
		rc.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(rc.QPS, rc.Burst)
	}
	group := func(gv schema.GroupVersion, apiPath string) (rest.Interface, error) {
		c := rest.CopyConfig(rc)
		c.GroupVersion, c.APIPath = &gv, apiPath
		c.NegotiatedSerializer = kindChecked{rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()}
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientForConfigAndClient(c, httpClient)
	}
	var a restAPI
	if a.core, err = group(corev1.SchemeGroupVersion, "/api"); err != nil {
		return nil, err
	}
	if a.storage, err = group(storagev1.SchemeGroupVersion, "/apis"); err != nil {
		return nil, err
	}
	if a.batch, err = group(batchv1.SchemeGroupVersion, "/apis"); err != nil {
		return nil, err
	}
	return a, nil
}

// kindChecked is the REST clients' serializer: client-go's, with decoders
// that refuse an answer of another kind than the object it is decoded
// into. client-go's Result.Into returns no error when the body decodes to
// another object (a Status of success, a PodList where claims were asked
// for) and leaves the given object empty: a List of claims or pods would
// then be a List of none, every home absent and no server running, to the
// decisions that read it. A Status of failure passes, as Into makes it the
// API error it is.
type kindChecked struct{ runtime.NegotiatedSerializer }

func (k kindChecked) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return kindCheckedDecoder{k.NegotiatedSerializer.DecoderToVersion(d, gv)}
}

type kindCheckedDecoder struct{ runtime.Decoder }

func (d kindCheckedDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	out, gvk, err := d.Decoder.Decode(data, defaults, into)
	if err != nil || into == nil || out == into {
		return out, gvk, err
	}
	if s, ok := out.(*metav1.Status); ok && s.Status != metav1.StatusSuccess {
		return out, gvk, nil
	}
	kind := fmt.Sprintf("%T", out)
	if gvk != nil && gvk.Kind != "" {
		kind = gvk.Kind
	}
	return nil, gvk, fmt.Errorf("the API server answered with a %s where a %T was expected; nothing is decided on an answer of another kind", kind, into)
}

type restAPI struct{ core, storage, batch rest.Interface }

func (a restAPI) CoreV1() CoreV1       { return coreREST(a) }
func (a restAPI) StorageV1() StorageV1 { return storageREST(a) }
func (a restAPI) BatchV1() BatchV1     { return batchREST(a) }

type (
	coreREST    restAPI
	storageREST restAPI
	batchREST   restAPI
)

// typed is client-go's generic typed client for one resource of a group.
func typed[T interface {
	runtime.Object
	metav1.Object
}, L runtime.Object](c rest.Interface, resource, namespace string, newT func() T, newL func() L) *gentype.ClientWithList[T, L] {
	return gentype.NewClientWithList[T, L](resource, c, parameterCodec, namespace, newT, newL, gentype.PrefersProtobuf[T]())
}

func (c coreREST) PersistentVolumeClaims(namespace string) Claims {
	return claimsREST{typed(c.core, "persistentvolumeclaims", namespace,
		func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} },
		func() *corev1.PersistentVolumeClaimList { return &corev1.PersistentVolumeClaimList{} }),
		c.core, namespace}
}

// claimsREST is the claims' typed client, and listPage.
type claimsREST struct {
	*gentype.ClientWithList[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	rc        rest.Interface
	namespace string
}

// pageLister is a Claims whose List pages can come undecoded (listPage).
type pageLister interface {
	listPage(ctx context.Context, opts metav1.ListOptions) (page[corev1.PersistentVolumeClaim], error)
}

// listPage is one List request, as the typed client makes it. A protobuf
// answer comes undecoded, its list metadata read ahead (peekListMeta), so
// that eachPage asks for the next page while this one decodes; any other
// answer is decoded at once.
func (c claimsREST) listPage(ctx context.Context, opts metav1.ListOptions) (page[corev1.PersistentVolumeClaim], error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	var contentType string
	res := c.rc.Get().
		UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource("persistentvolumeclaims").
		VersionedParams(&opts, parameterCodec).
		Timeout(timeout).
		Do(ctx).
		ContentType(&contentType)
	if err := res.Error(); err != nil {
		return page[corev1.PersistentVolumeClaim]{}, err
	}
	decode := func() ([]corev1.PersistentVolumeClaim, metav1.ListMeta, error) {
		var l corev1.PersistentVolumeClaimList
		if err := res.Into(&l); err != nil {
			return nil, metav1.ListMeta{}, err
		}
		return l.Items, l.ListMeta, nil
	}
	body, _ := res.Raw()
	if meta, ok := peekListMeta(contentType, body); ok {
		return page[corev1.PersistentVolumeClaim]{meta: meta, decode: decode}, nil
	}
	items, meta, err := decode()
	return page[corev1.PersistentVolumeClaim]{items: items, meta: meta}, err
}

func (c coreREST) PersistentVolumes() Volumes {
	return typed(c.core, "persistentvolumes", "",
		func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} },
		func() *corev1.PersistentVolumeList { return &corev1.PersistentVolumeList{} })
}

func (c coreREST) Pods(namespace string) Pods {
	return typed(c.core, "pods", namespace,
		func() *corev1.Pod { return &corev1.Pod{} },
		func() *corev1.PodList { return &corev1.PodList{} })
}

func (c coreREST) ConfigMaps(namespace string) ConfigMaps {
	return typed(c.core, "configmaps", namespace,
		func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (c coreREST) Nodes() Nodes {
	return typed(c.core, "nodes", "",
		func() *corev1.Node { return &corev1.Node{} },
		func() *corev1.NodeList { return &corev1.NodeList{} })
}

func (c coreREST) Namespaces() Namespaces {
	return typed(c.core, "namespaces", "",
		func() *corev1.Namespace { return &corev1.Namespace{} },
		func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

func (c storageREST) StorageClasses() StorageClasses {
	return typed(c.storage, "storageclasses", "",
		func() *storagev1.StorageClass { return &storagev1.StorageClass{} },
		func() *storagev1.StorageClassList { return &storagev1.StorageClassList{} })
}

func (c batchREST) Jobs(namespace string) Jobs {
	return typed(c.batch, "jobs", namespace,
		func() *batchv1.Job { return &batchv1.Job{} },
		func() *batchv1.JobList { return &batchv1.JobList{} })
}
