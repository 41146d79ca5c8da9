package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The node's CSI driver: a minimal node plugin that serves each volume as a
// directory of the node's scratch directory (csi-volumes/HANDLE), bind-mounted
// onto the target path kubelet names. It runs in the test process, registers
// with kubelet through kubelet's plugin registration socket (as
// node-driver-registrar does for a real driver), and has no controller
// service: volumes are PersistentVolumes a test creates (CSIVolume), bound
// to claims of CSIClass. Kubelet calls it for real: NodePublishVolume when a
// pod starts, NodeUnpublishVolume when it ends. Its CSIDriver object says
// that nothing attaches its volumes, so kubelet mounts them at once.

// CSIDriverName is the name of the node's CSI driver.
const CSIDriverName = "hostpath.testbed.invalid"

// CSIClass is the StorageClass of the CSI driver's volumes (provisioner
// CSIDriverName; nothing provisions them: tests create the volumes).
const CSIClass = "testbed-csi"

type csiPlugin struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedNodeServer
	registerapi.UnimplementedRegistrationServer

	volumes  string // where volumes' directories are, by handle
	endpoint string // the CSI socket
	registry string // the registration socket
	servers  []*grpc.Server
	done     sync.WaitGroup

	mu         sync.Mutex
	registered error // the status kubelet notified; nil before and after success
}

// startCSI starts the plugin's CSI and registration servers; kubelet's
// plugin watcher finds the registration socket in its plugins_registry
// directory.
func (c *Cluster) startCSI(n *node) error {
	root := filepath.Join(n.dir, "kubelet")
	p := &csiPlugin{
		volumes:  filepath.Join(n.dir, "csi-volumes"),
		endpoint: filepath.Join(root, "plugins", CSIDriverName, "csi.sock"),
		registry: filepath.Join(root, "plugins_registry", CSIDriverName+"-reg.sock"),
	}
	for _, d := range []string{p.volumes, filepath.Dir(p.endpoint), filepath.Dir(p.registry)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	n.csi = p
	serve := func(socket string, register func(*grpc.Server)) error {
		_ = os.Remove(socket)
		l, err := net.Listen("unix", socket)
		if err != nil {
			return err
		}
		s := grpc.NewServer()
		register(s)
		p.servers = append(p.servers, s)
		p.done.Add(1)
		go func() {
			defer p.done.Done()
			_ = s.Serve(l)
		}()
		return nil
	}
	if err := serve(p.endpoint, func(s *grpc.Server) {
		csi.RegisterIdentityServer(s, p)
		csi.RegisterNodeServer(s, p)
	}); err != nil {
		return err
	}
	return serve(p.registry, func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, p) })
}

// waitCSI creates the driver's CSIDriver object and StorageClass and waits
// until kubelet has registered the driver (the node's CSINode lists it).
func (c *Cluster) waitCSI(ctx context.Context, n *node) error {
	admin := c.Admin()
	no := false
	_, err := admin.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: CSIDriverName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &no, PodInfoOnMount: &no,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	bind := storagev1.VolumeBindingImmediate
	_, err = admin.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: CSIClass},
		Provisioner:       CSIDriverName,
		VolumeBindingMode: &bind,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return waitFor(ctx, 60*time.Second, n.kubelet, filepath.Join(n.dir, "kubelet.log"), func() bool {
		if err := n.csi.registrationError(); err != nil {
			return false
		}
		cn, err := admin.StorageV1().CSINodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == CSIDriverName && d.NodeID == NodeName {
				return true
			}
		}
		return false
	})
}

func (p *csiPlugin) registrationError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.registered
}

// stop ends both servers (kubelet's connections with them) and removes the
// sockets. Mounts left under the node's directory go with the node's clean.
func (p *csiPlugin) stop() {
	for _, s := range p.servers {
		s.Stop()
	}
	p.done.Wait()
	_ = os.Remove(p.endpoint)
	_ = os.Remove(p.registry)
}

// CSIVolume is a PersistentVolume of the node's CSI driver with the given
// handle (its directory is CSIVolumeDir(handle), made on first use), size
// and access mode, in CSIClass, to be bound by the PV binder.
func CSIVolume(name, handle, size string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{mode},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              CSIClass,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: CSIDriverName, VolumeHandle: handle},
			},
		},
	}
}

// CSIVolumeDir is the directory that holds the CSI volume with handle on
// this machine ("" without a node).
func (c *Cluster) CSIVolumeDir(handle string) string {
	if c.node == nil || c.node.csi == nil {
		return ""
	}
	return filepath.Join(c.node.csi.volumes, handle)
}

// GetInfo is kubelet's first call on the registration socket.
func (p *csiPlugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: CSIDriverName, Endpoint: p.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus tells whether kubelet registered the driver.
func (p *csiPlugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.registered = nil
	if !s.PluginRegistered {
		p.registered = fmt.Errorf("kubelet refused the CSI driver: %s", s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (p *csiPlugin) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: CSIDriverName, VendorVersion: "1"}, nil
}

// GetPluginCapabilities: a node plugin only (no controller service).
func (p *csiPlugin) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

func (p *csiPlugin) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (p *csiPlugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: NodeName}, nil
}

// NodeGetCapabilities: none (no staging), so kubelet only publishes.
func (p *csiPlugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodePublishVolume bind-mounts the volume's directory onto the target
// path (read-only when asked). Publishing again where it is mounted succeeds.
func (p *csiPlugin) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	handle, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case handle == "" || strings.ContainsAny(handle, "/\x00") || handle == "." || handle == "..":
		return nil, status.Errorf(codes.InvalidArgument, "volume handle %q is not a directory name", handle)
	case target == "" || !filepath.IsAbs(target):
		return nil, status.Errorf(codes.InvalidArgument, "target path %q is not absolute", target)
	case req.GetVolumeCapability().GetMount() == nil:
		return nil, status.Error(codes.InvalidArgument, "only filesystem volumes are served")
	}
	src := filepath.Join(p.volumes, handle)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if mounted(target) {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind-mount %s on %s: %v", src, target, err)
	}
	if req.GetReadonly() {
		if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			_ = syscall.Unmount(target, 0)
			return nil, status.Errorf(codes.Internal, "remount %s read-only: %v", target, err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target path and removes it.
func (p *csiPlugin) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if target == "" || !filepath.IsAbs(target) {
		return nil, status.Errorf(codes.InvalidArgument, "target path %q is not absolute", target)
	}
	for mounted(target) {
		if err := syscall.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// mounted reports whether path is a mount point.
func mounted(path string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 && unescapeMount(fields[4]) == path {
			return true
		}
	}
	return false
}
