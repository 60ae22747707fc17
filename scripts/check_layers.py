#!/usr/bin/python3
"""The layer check of `make lint`: modules stand in data-flow order, each above the ones it uses.

The order is CMakeLists.txt's MMPT_MODULES, and src/README.md walks the modules in that order.
A module's library sources (not its tests, fuzz targets or benchmarks, which may use any module
to make their inputs) include only modules at or below it, and its CMake links only modules
below it that it includes. Prints each violation as `file:line: what`, exits 1 on any.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEST_FILE = re.compile(r"_(test|fuzz|bench)\.cc$|_test_util\.h$")


def module_order():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"^set\(MMPT_MODULES ([a-z_ ]+)\)", cmake, re.M)
    return match.group(1).split()


def readme_order():
    text = (ROOT / "src/README.md").read_text()
    return re.findall(r"^\d+\. \*\*`([a-z_]+)`\*\*", text, re.M)


def main():
    order = module_order()
    rank = {name: i for i, name in enumerate(order)}
    errors = []
    if readme_order() != order:
        errors.append(f"src/README.md:1: walks the modules as {readme_order()}, "
                      f"CMakeLists.txt's MMPT_MODULES orders them {order}")
    for module in order:
        folder = ROOT / "src/mmpt" / module
        included = set()
        for source in sorted(folder.rglob("*")):
            if source.suffix not in (".cc", ".h") or TEST_FILE.search(source.name):
                continue
            where = source.relative_to(ROOT)
            for number, line in enumerate(source.read_text().splitlines(), 1):
                match = re.match(r'#include "mmpt/([a-z_]+)/', line)
                if not match or match.group(1) not in rank:
                    continue
                used = match.group(1)
                included.add(used)
                if rank[used] > rank[module]:
                    errors.append(f"{where}:{number}: {module} includes {used}, a module "
                                  f"above it")
        cmake = folder / "CMakeLists.txt"
        call = re.search(r"mmpt_module\(\s*" + module + r"\s+DEPS([^)]*)\)", cmake.read_text())
        for linked in re.findall(r"\bmmpt_([a-z_]+)\b", call.group(1) if call else ""):
            if linked not in rank:
                continue
            if rank[linked] >= rank[module]:
                errors.append(f"{cmake.relative_to(ROOT)}:1: {module} links {linked}, a module "
                              f"at or above it")
            elif linked not in included:
                errors.append(f"{cmake.relative_to(ROOT)}:1: {module} links {linked} but no "
                              f"source of it includes {linked}")
    for error in errors:
        print(error)
    if errors:
        return 1
    print(f"layers: {len(order)} modules, each includes and links only modules below it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
