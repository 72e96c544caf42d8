#!/usr/bin/env bash
# Installs code-server (a real VS Code UI in a browser) into a cache outside the repository.
# The native build takes minutes, so it runs once per machine: a later call finds the
# finished install and returns at once. Prints the install's folder on stdout.
#
# Why each step (see /work/shared/design/REAL-CLIENTS.md): only npm, PyPI and Debian are
# reachable, code-server's install fetches ripgrep from GitHub, refuses to run as root
# without unsafe-perm, and npm 11 skips dependencies' install scripts unless allowed.
set -euo pipefail

VERSION=4.100.3  # declares Node 20; newer releases need Node 24
CACHE="${PRISM_E2E_CACHE:-$HOME/.cache/prism-code/e2e}"
DEST="$CACHE/code-server-$VERSION"
if [ -f "$DEST/.installed" ]; then
  echo "$DEST"
  exit 0
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] || { echo "code-server $VERSION needs Node 20, found $(node -v)" >&2; exit 1; }
command -v rg >/dev/null || { echo "ripgrep is missing (Debian: apt-get install -y ripgrep)" >&2; exit 1; }
[ -f /usr/include/krb5.h ] || [ -f /usr/include/krb5/krb5.h ] \
  || { echo "kerberos headers are missing (Debian: apt-get install -y libkrb5-dev)" >&2; exit 1; }

mkdir -p "$CACHE"
STAGE=$(mktemp -d "$CACHE/.code-server-$VERSION.XXXXXX")
LOG="$STAGE.log"
trap 'rm -rf "$STAGE"' EXIT
trap 'echo "code-server install failed; see $LOG" >&2; tail -20 "$LOG" >&2' ERR
echo "installing code-server $VERSION into $DEST (a few minutes; log: $LOG)" >&2
exec 3>&1 >"$LOG" 2>&1

# postinstall.sh reads the user agent to pick npm and check Node's version, and wants
# unsafe-perm as root; node-pty's build runs `npx node-gyp@...`, which must not ask.
export npm_config_unsafe_perm=true npm_config_yes=true npm_config_audit=false npm_config_fund=false
export npm_config_user_agent="npm/$(npm -v) node/$(node -v) linux x64"
# @vscode/ripgrep looks for its download in $TMPDIR before GitHub: keep that in the stage.
export TMPDIR="$STAGE/tmp"
mkdir -p "$TMPDIR"

# npm 11 runs a dependency's install script only if the project's .npmrc allows it by name.
echo "allow-scripts=argon2" >"$STAGE/.npmrc"
npm install --prefix "$STAGE" "code-server@$VERSION" --ignore-scripts
# argon2 (loaded at start-up) has no reachable prebuilt binary: this builds it.
(cd "$STAGE" && npm rebuild argon2)
(cd "$STAGE" && node -e "require('argon2')")

pkg="$STAGE/node_modules/code-server"
rg_version=$(node -p "require('$pkg/lib/vscode/npm-shrinkwrap.json').packages['node_modules/@vscode/ripgrep'].version")
rg_dir="$TMPDIR/vscode-ripgrep-cache-$rg_version"
mkdir -p "$rg_dir/rg"
cp "$(command -v rg)" "$rg_dir/rg/rg"
tar -czf "$rg_dir/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$rg_dir/rg" rg

# The native modules VS Code's server side loads on Linux (the windows-* ones are not).
native="node-pty @vscode/spdlog @parcel/watcher kerberos native-watchdog @vscode/deviceid"
echo "allow-scripts=$(echo $native @vscode/ripgrep | tr ' ' ',')" >"$pkg/lib/vscode/.npmrc"
(cd "$pkg" && sh ./postinstall.sh)
# Fail here, not later in the browser, if a native module did not build for this Node.
(cd "$pkg/lib/vscode" && for m in $native; do node -e "require('$m')"; done)
test -x "$pkg/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"

rm -rf "$TMPDIR"
touch "$STAGE/.installed"
rm -rf "$DEST"
mv "$STAGE" "$DEST"
trap - EXIT
mv "$LOG" "$DEST/install.log"
echo "$DEST" >&3
