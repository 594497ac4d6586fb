#!/usr/bin/env bash
# The tree's C++ is formatted as .clang-format says (STYLE.md): every tracked .cc/.h file of the checkout
# SOURCE_DIR (default: this script's checkout) through `clang-format --dry-run -Werror`. Lists the files that
# differ and fails; `make format` rewrites them. Fails, never skips, when clang-format is missing
# (`make deps` installs it).
# Usage: format_check.sh [SOURCE_DIR]
set -euo pipefail
SRC="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
command -v clang-format > /dev/null || { echo "format check: clang-format is not installed (make deps installs it)"; exit 1; }
cd "$SRC"
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find include src tests fuzz benchmarks tools -name '*.cc' -o -name '*.h' 2>/dev/null | sort)
fi
# One clang-format for all files (a process per file costs ~40 s); its diagnostics name each file.
status=0
out="$(clang-format --dry-run -Werror "${files[@]}" 2>&1)" || status=$?
mapfile -t bad < <(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if ((status != 0)) && ((${#bad[@]} == 0)); then
  echo "format check: clang-format failed (exit $status):"; printf '%s\n' "$out" | head -20; exit 1
fi
if ((${#bad[@]})); then
  echo "format check: ${#bad[@]} of ${#files[@]} files differ from .clang-format (run make format):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format check: ${#files[@]} files formatted"
