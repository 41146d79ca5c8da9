#!/usr/bin/env bash
# Writes the test node's container images as one docker-archive tarball, built
# from files of Debian packages installed on this machine (nothing is pulled):
#
#   testbed.invalid/tools:1  busybox (sh and the usual commands) and rsync with
#                            its shared libraries, for pods and the copy Job
#   testbed.invalid/pause:1  the same layer running a long sleep, the pod sandbox
#
# Both images share one layer. The archive's name carries a hash of this script
# and the package versions, so it is rebuilt only when one of them changes.
#
#   images.sh OUTDIR   prints the archive's path
set -euo pipefail

out="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for f in /bin/busybox /usr/bin/rsync; do
  if [[ ! -x "$f" ]]; then
    echo "testbed: $f missing: install Debian's busybox-static and rsync (make nodedeps)" >&2
    exit 1
  fi
done
versions="$(dpkg-query -W -f '${Package}=${Version}\n' busybox-static rsync 2>/dev/null || true)"
key="$( (cat "$here/images.sh"; echo "$versions"; ldd /usr/bin/rsync | grep -o '/[^ ]*' | xargs -r sha256sum) | sha256sum | cut -c1-12)"
archive="$out/images-$key.tar"
if [[ -f "$archive" ]]; then
  echo "$archive"
  exit 0
fi
echo "testbed: building the node images" >&2

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/bin" "$root/usr/bin" "$root/tmp" "$root/etc" "$root/dev" "$root/proc" "$root/sys"
chmod 1777 "$root/tmp"
cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
  [[ "$applet" == busybox ]] || ln -s busybox "$root/bin/$applet"
done
cp /usr/bin/rsync "$root/usr/bin/rsync"
# rsync's shared libraries and the dynamic loader, at the paths ldd names.
for lib in $(ldd /usr/bin/rsync | grep -o '/[^ ]*'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
printf 'root:x:0:0:root:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"

img="$work/img"
mkdir -p "$img"
tarc() { (cd "$1" && tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$2" -- *); }
tarc "$root" "$img/layer.tar"
diff_id="sha256:$(sha256sum "$img/layer.tar" | cut -d' ' -f1)"
ldir="$(sha256sum "$img/layer.tar" | cut -c1-64)"
mkdir "$img/$ldir"
mv "$img/layer.tar" "$img/$ldir/layer.tar"

# config NAME CMD_JSON: writes an image config, prints its file name.
config() {
  local body
  body="$(printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Env":["PATH=/usr/bin:/bin"],"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["%s"]},"history":[{"created":"1970-01-01T00:00:00Z","comment":"%s"}]}' "$2" "$diff_id" "$1")"
  local sum
  sum="$(printf '%s' "$body" | sha256sum | cut -c1-64)"
  printf '%s' "$body" > "$img/$sum.json"
  echo "$sum.json"
}
tools_cfg="$(config tools '["sh"]')"
pause_cfg="$(config pause '["sleep","2147483647"]')"
printf '[{"Config":"%s","RepoTags":["testbed.invalid/tools:1"],"Layers":["%s/layer.tar"]},{"Config":"%s","RepoTags":["testbed.invalid/pause:1"],"Layers":["%s/layer.tar"]}]' \
  "$tools_cfg" "$ldir" "$pause_cfg" "$ldir" > "$img/manifest.json"
tarc "$img" "$archive.tmp"
mv "$archive.tmp" "$archive"
echo "$archive"
