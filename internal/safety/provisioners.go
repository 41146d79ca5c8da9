package safety

import "strings"

// Provisioners known to serve ReadWriteMany volumes.
var rwxProvisioners = []string{
	"driver.longhorn.io",           // Longhorn RWX (share-manager NFS)
	"efs.csi.aws.com",              // Amazon EFS
	"nfs.csi.k8s.io",               // NFS CSI driver
	"cephfs.csi.ceph.com",          // CephFS (also rook-ceph.cephfs.csi.ceph.com)
	"file.csi.azure.com",           // Azure Files
	"kubernetes.io/azure-file",     // Azure Files (in-tree)
	"filestore.csi.storage.gke.io", // Google Filestore
	"k8s-sigs.io/nfs-subdir-external-provisioner",
	"cluster.local/nfs-subdir-external-provisioner",
	"csi.juicefs.com",
	"nfs.csi.netapp.io", "csi.trident.netapp.io",
	"kubernetes.io/glusterfs",
}

// Provisioners whose volumes are block devices that one node attaches:
// they cannot serve ReadWriteMany.
var rwoOnlyProvisioners = []string{
	"ebs.csi.aws.com", "kubernetes.io/aws-ebs",
	"pd.csi.storage.gke.io", "kubernetes.io/gce-pd",
	"disk.csi.azure.com", "kubernetes.io/azure-disk",
	"csi.hetzner.cloud",
	"rancher.io/local-path", "kubernetes.io/no-provisioner",
	"dobs.csi.digitalocean.com",
	"cinder.csi.openstack.org", "kubernetes.io/cinder",
	"linodebs.csi.linode.com",
	"topolvm.io", "topolvm.cybozu.com",
	"openebs.io/local",
	"rbd.csi.ceph.com",
}

// RWXSupport says what is known of a provisioner's ReadWriteMany support.
type RWXSupport int

const (
	RWXUnknown RWXSupport = iota
	RWXSupported
	RWXUnsupported
)

// ProvisionerRWX looks a provisioner up in the lists above. A provisioner
// prefixed with an operator's namespace (rook-ceph.cephfs.csi.ceph.com) is
// matched by suffix.
func ProvisionerRWX(provisioner string) RWXSupport {
	match := func(list []string) bool {
		for _, p := range list {
			if provisioner == p || strings.HasSuffix(provisioner, "."+p) {
				return true
			}
		}
		return false
	}
	switch {
	case match(rwxProvisioners):
		return RWXSupported
	case match(rwoOnlyProvisioners):
		return RWXUnsupported
	}
	return RWXUnknown
}
