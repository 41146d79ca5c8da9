#!/usr/bin/env bash
# Builds the test bed binaries (OpenTofu, Terraform, etcd, kube-apiserver,
# kube-controller-manager, Helm, the hashicorp/helm provider; kubelet and
# kube-scheduler for the node) from their Go modules into a cache outside git,
# and the node's container images (images.sh, from Debian's busybox-static and
# rsync: `make nodedeps`).
#
# Terraform and the helm provider are built from sources read in place from
# ../shared/reference/ (terraform-v1.15.9-nested/BUILD.md,
# terraform-provider-helm-v3.1.2/BUILD-HERE.md): Terraform's module from the
# module proxy with the nested modules its go.mod replaces laid over it in a
# scratch directory, the helm provider in its own tree.
#
# The cache key is the component version plus a hash of the pinning go.mod and
# go.sum (for Terraform: of the nested modules), so a warm run only checks that
# the files exist and a version bump rebuilds. Prints the directory that holds
# the binaries on its last line.
#
#   TESTBED_BIN_DIR  where binaries go (default: ~/.cache/terraform-provider-jupyter/testbed)
#   REFERENCE_DIR    the upstream sources (default: ../shared/reference beside the repository)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${TESTBED_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-jupyter/testbed}"
mkdir -p "$bin"
ref="${REFERENCE_DIR:-$here/../../../shared/reference}"

TOFU_VERSION=1.12.6
KUBE_VERSION=1.37.2
ETCD_VERSION=3.7.0
HELM_VERSION=4.3.2
TERRAFORM_VERSION=1.15.9
HELM_PROVIDER_VERSION=3.1.2

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

# treekey DIR: a hash of every file under DIR.
treekey() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-12; }

# Terraform's go.mod replaces nested modules that its module zip leaves out:
# the module and the nested modules, verbatim from the tag, are joined in a
# scratch directory and built there.
build_terraform() {
  local nested="$ref/terraform-v$TERRAFORM_VERSION-nested"
  local out="$bin/terraform-$TERRAFORM_VERSION-$(treekey "$nested")"
  if [[ ! -x "$out" ]]; then
    echo "testbed: building terraform $TERRAFORM_VERSION (cold builds take about 10 minutes)" >&2
    local src mod
    src="$(mktemp -d)"
    mod="$(cd "$src" && GOFLAGS=-mod=mod go mod download -json "github.com/hashicorp/terraform@v$TERRAFORM_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -d "$mod" ]] || { echo "testbed: go mod download gave no directory for terraform" >&2; exit 1; }
    cp -r "$mod/." "$src/" && chmod -R u+w "$src"
    cp -r "$nested/internal/." "$src/internal/" && chmod -R u+w "$src"
    (cd "$src" && CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" -o "$out.tmp" .)
    rm -rf "$src"
    mv "$out.tmp" "$out"
  fi
  ln -sf "$(basename "$out")" "$bin/terraform"
}

# The helm provider builds in its own tree, read only; its dependencies come
# from the module proxy.
build_helm_provider() {
  local src="$ref/terraform-provider-helm-v$HELM_PROVIDER_VERSION"
  local out="$bin/terraform-provider-helm-$HELM_PROVIDER_VERSION-$(cat "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
  if [[ ! -x "$out" ]]; then
    echo "testbed: building terraform-provider-helm $HELM_PROVIDER_VERSION (cold builds take about 5 minutes)" >&2
    (cd "$src" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.Version=$HELM_PROVIDER_VERSION" -o "$out.tmp" .)
    mv "$out.tmp" "$out"
  fi
  ln -sf "$(basename "$out")" "$bin/terraform-provider-helm"
}

kv="k8s.io/component-base/version"
cv="k8s.io/client-go/pkg/version"
kube_ldflags="-s -w"
for p in "$kv" "$cv"; do
  kube_ldflags+=" -X $p.gitVersion=v$KUBE_VERSION -X $p.gitMajor=${KUBE_VERSION%%.*}"
  minor="${KUBE_VERSION#*.}"; minor="${minor%%.*}"
  kube_ldflags+=" -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

want="${*:-tofu terraform etcd kube-apiserver kube-controller-manager helm helm-provider kubelet kube-scheduler images}"
for w in $want; do
  case "$w" in
    tofu) build tofu tofu "$TOFU_VERSION" github.com/opentofu/opentofu/cmd/tofu \
            "-s -w -X github.com/opentofu/opentofu/version.dev=no" ;;
    terraform) build_terraform ;;
    helm-provider) build_helm_provider ;;
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
