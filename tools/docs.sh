#!/usr/bin/env bash
# Renders docs/ with tfplugindocs from templates/, examples/ and the provider
# schema. Terraform cannot be downloaded here, so the schema comes from the
# test bed's OpenTofu (`tofu providers schema -json` with a dev override).
#
#   tools/docs.sh docs    write docs/
#   tools/docs.sh check   fail if docs/ differs from what would be written
set -euo pipefail
mode="${1:-docs}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin="$(tools/testbed/build.sh tofu | tail -n 1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

go build -o "$work/plugins/terraform-provider-jupyter" .
(cd tools && go build -o "$work/tfplugindocs" github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs)

cat > "$work/tofu.rc" <<EOT
provider_installation {
  dev_overrides { "jupyter-infra/jupyter" = "$work/plugins" }
  direct {}
}
EOT
mkdir -p "$work/cfg"
cat > "$work/cfg/main.tf" <<'EOT'
terraform {
  required_providers {
    jupyter = { source = "jupyter-infra/jupyter" }
  }
}
EOT
(cd "$work/cfg" && TF_CLI_CONFIG_FILE="$work/tofu.rc" "$bin/tofu" providers schema -json 2>/dev/null) > "$work/schema.json"
# tfplugindocs looks a provider up by its short name (or as hashicorp/NAME).
sed -i "s#\"registry.opentofu.org/jupyter-infra/jupyter\"#\"jupyter\"#" "$work/schema.json"

# Render from a copy so that a check never touches the work tree.
mkdir -p "$work/src"
cp -r templates examples "$work/src/"
"$work/tfplugindocs" generate \
  --provider-name jupyter \
  --providers-schema "$work/schema.json" \
  --website-source-dir templates \
  --examples-dir examples \
  --rendered-website-dir docs \
  --provider-dir "$work/src" >"$work/tfplugindocs.log" 2>&1 || { cat "$work/tfplugindocs.log"; exit 1; }

case "$mode" in
  docs)
    rm -rf docs && cp -r "$work/src/docs" docs
    echo "docs/ regenerated" ;;
  check)
    if ! diff -ru docs "$work/src/docs"; then
      echo "docs/ is stale: run 'make docs' and commit the result" >&2
      exit 1
    fi
    echo "docs/ is up to date" ;;
  *) echo "usage: $0 docs|check" >&2; exit 2 ;;
esac
