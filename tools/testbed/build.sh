#!/usr/bin/env bash
# Builds the test bed binaries (OpenTofu, etcd, kube-apiserver,
# kube-controller-manager, Helm; kubelet and kube-scheduler for the node) from
# their Go modules into a cache outside git, and the node's container images
# (images.sh, from Debian's busybox-static and rsync: `make nodedeps`).
#
# The cache key is the component version plus a hash of the pinning go.mod and
# go.sum, so a warm run only checks that the files exist and a version bump
# rebuilds. Prints the directory that holds the binaries on its last line.
#
#   TESTBED_BIN_DIR  where binaries go (default: ~/.cache/terraform-provider-jupyter/testbed)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${TESTBED_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-jupyter/testbed}"
mkdir -p "$bin"

TOFU_VERSION=1.12.6
KUBE_VERSION=1.37.2
ETCD_VERSION=3.7.0
HELM_VERSION=4.3.2

key() { cat "$here/$1/go.mod" "$here/$1/go.sum" | sha256sum | cut -c1-12; }

# build DIR NAME VERSION PACKAGE LDFLAGS
build() {
  local dir="$1" name="$2" version="$3" pkg="$4" ldflags="$5"
  local out="$bin/$name-$version-$(key "$dir")"
  if [[ ! -x "$out" ]]; then
    echo "testbed: building $name $version (cold builds take several minutes)" >&2
    (cd "$here/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg")
    mv "$out.tmp" "$out"
  fi
  ln -sf "$(basename "$out")" "$bin/$name"
}

kv="k8s.io/component-base/version"
cv="k8s.io/client-go/pkg/version"
kube_ldflags="-s -w"
for p in "$kv" "$cv"; do
  kube_ldflags+=" -X $p.gitVersion=v$KUBE_VERSION -X $p.gitMajor=${KUBE_VERSION%%.*}"
  minor="${KUBE_VERSION#*.}"; minor="${minor%%.*}"
  kube_ldflags+=" -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

want="${*:-tofu etcd kube-apiserver kube-controller-manager helm kubelet kube-scheduler images}"
for w in $want; do
  case "$w" in
    tofu) build tofu tofu "$TOFU_VERSION" github.com/opentofu/opentofu/cmd/tofu \
            "-s -w -X github.com/opentofu/opentofu/version.dev=no" ;;
    etcd) build kube etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 "-s -w" ;;
    kube-apiserver) build kube kube-apiserver "$KUBE_VERSION" k8s.io/kubernetes/cmd/kube-apiserver "$kube_ldflags" ;;
    kube-controller-manager) build kube kube-controller-manager "$KUBE_VERSION" \
            k8s.io/kubernetes/cmd/kube-controller-manager "$kube_ldflags" ;;
    helm) build helm helm "$HELM_VERSION" helm.sh/helm/v4/cmd/helm \
            "-s -w -X helm.sh/helm/v4/internal/version.version=v$HELM_VERSION" ;;
    kubelet) build node kubelet "$KUBE_VERSION" k8s.io/kubernetes/cmd/kubelet "$kube_ldflags" ;;
    kube-scheduler) build node kube-scheduler "$KUBE_VERSION" k8s.io/kubernetes/cmd/kube-scheduler "$kube_ldflags" ;;
    images) archive="$("$here/images.sh" "$bin")"; ln -sf "$(basename "$archive")" "$bin/images.tar" ;;
    *) echo "testbed: unknown component $w" >&2; exit 2 ;;
  esac
done
echo "$bin"
