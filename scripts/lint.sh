#!/usr/bin/env bash
# lint.sh: the style checks of `make lint` (and of `make test`, its first tier). C++ against
# .clang-format (clang-format --dry-run: a difference is an error naming file and line; fix with
# `clang-format -i FILE`), Python against .flake8 (pycodestyle and pyflakes), and the layers:
# no module includes or links a module above it (scripts/check_layers.py).
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t cxx < <(git ls-files '*.cc' '*.h')
  mapfile -t py < <(git ls-files '*.py')
else  # an exported tree: every source outside build outputs and installed packages
  mapfile -t cxx < <(find src tools python bench -name '*.cc' -o -name '*.h' | sort)
  mapfile -t py < <(find python bench tests -name '*.py' | sort)
fi
clang-format --dry-run -Werror "${cxx[@]}"
/usr/bin/python3 -m flake8 "${py[@]}"
/usr/bin/python3 scripts/check_layers.py
echo "lint: ${#cxx[@]} C++ and ${#py[@]} Python files follow .clang-format and .flake8"
