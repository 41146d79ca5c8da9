package safety

import (
	"strings"
	"testing"
)

func TestProvisionerRWX(t *testing.T) {
	for _, tc := range []struct {
		provisioner string
		want        RWXSupport
	}{
		// Shared file systems.
		{"efs.csi.aws.com", RWXSupported},
		{"driver.longhorn.io", RWXSupported},
		{"nfs.csi.k8s.io", RWXSupported},
		{"cephfs.csi.ceph.com", RWXSupported},
		{"rook-ceph.cephfs.csi.ceph.com", RWXSupported}, // operator namespace prefix
		{"my-ns.cephfs.csi.ceph.com", RWXSupported},
		{"file.csi.azure.com", RWXSupported},
		{"kubernetes.io/azure-file", RWXSupported},
		{"filestore.csi.storage.gke.io", RWXSupported},
		{"k8s-sigs.io/nfs-subdir-external-provisioner", RWXSupported},
		{"cluster.local/nfs-subdir-external-provisioner", RWXSupported},
		{"csi.juicefs.com", RWXSupported},
		{"csi.trident.netapp.io", RWXSupported},

		// Block volumes and node-local storage.
		{"ebs.csi.aws.com", RWXUnsupported},
		{"kubernetes.io/aws-ebs", RWXUnsupported},
		{"pd.csi.storage.gke.io", RWXUnsupported},
		{"kubernetes.io/gce-pd", RWXUnsupported},
		{"disk.csi.azure.com", RWXUnsupported},
		{"rancher.io/local-path", RWXUnsupported},
		{"kubernetes.io/no-provisioner", RWXUnsupported},
		{"csi.hetzner.cloud", RWXUnsupported},
		{"dobs.csi.digitalocean.com", RWXUnsupported},
		{"cinder.csi.openstack.org", RWXUnsupported},
		{"topolvm.io", RWXUnsupported},
		{"openebs.io/local", RWXUnsupported},
		{"rbd.csi.ceph.com", RWXUnsupported},
		{"rook-ceph.rbd.csi.ceph.com", RWXUnsupported}, // operator namespace prefix

		// Unknown: not listed, or only similar to a listed name.
		{"", RWXUnknown},
		{"example.com/fancy", RWXUnknown},
		{"xefs.csi.aws.com", RWXUnknown},      // a suffix match needs a dot before it
		{"efs.csi.aws.com.evil", RWXUnknown},  // prefixes do not match
		{"EFS.CSI.AWS.COM", RWXUnknown},       // provisioner names are case-sensitive
		{"csi.aws.com", RWXUnknown},           // a parent domain is not the driver
		{"ebs.csi.aws.com/extra", RWXUnknown}, // neither is a longer path
		{"local-path", RWXUnknown},
	} {
		if got := ProvisionerRWX(tc.provisioner); got != tc.want {
			t.Errorf("ProvisionerRWX(%q) = %v, want %v", tc.provisioner, got, tc.want)
		}
	}
}

// No provisioner is on both lists, and no entry of one list is a dotted
// suffix of an entry of the other (which would make the answer depend on
// which list is searched first).
func TestProvisionerListsDisjoint(t *testing.T) {
	for _, rwx := range rwxProvisioners {
		for _, rwo := range rwoOnlyProvisioners {
			if rwx == rwo || strings.HasSuffix(rwx, "."+rwo) || strings.HasSuffix(rwo, "."+rwx) {
				t.Errorf("%q and %q overlap", rwx, rwo)
			}
		}
	}
	for _, list := range [][]string{rwxProvisioners, rwoOnlyProvisioners} {
		seen := map[string]bool{}
		for _, p := range list {
			if p == "" || p != strings.TrimSpace(p) || seen[p] {
				t.Errorf("bad or duplicate entry %q", p)
			}
			seen[p] = true
		}
	}
}

// Every listed provisioner is classified as its list says, with or without
// an operator's namespace in front.
func TestProvisionerListsClassify(t *testing.T) {
	for _, p := range rwxProvisioners {
		for _, q := range []string{p, "ns." + p} {
			if got := ProvisionerRWX(q); got != RWXSupported {
				t.Errorf("ProvisionerRWX(%q) = %v, want RWXSupported", q, got)
			}
		}
	}
	for _, p := range rwoOnlyProvisioners {
		for _, q := range []string{p, "ns." + p} {
			if got := ProvisionerRWX(q); got != RWXUnsupported {
				t.Errorf("ProvisionerRWX(%q) = %v, want RWXUnsupported", q, got)
			}
		}
	}
}
