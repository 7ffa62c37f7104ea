#!/usr/bin/env python3
"""Lists functions longer than a threshold, longest first, as clang-tidy counts them.

usage: scripts/function_sizes.py BUILD_DIR THRESHOLD FILE...

BUILD_DIR must hold compile_commands.json. Each line: lines, place, name. The count
is clang-tidy's readability-function-size (whitespace and comments included), so a
lambda is counted inside the function that holds it. Exits 1 when any is listed.
"""
import re
import subprocess
import sys


def long_functions(build, threshold, path):
    config = ("{CheckOptions: [{key: readability-function-size.LineThreshold, "
              "value: %d}]}" % threshold)
    out = subprocess.run(
        ["clang-tidy-14", "-p", build, "--checks=-*,readability-function-size",
         "--extra-arg=-Wno-unknown-warning-option", "--config=" + config, path],
        capture_output=True, text=True).stdout
    found, place, name = [], None, None
    for line in out.splitlines():
        m = re.match(r"(\S+): warning: function '(.*)' exceeds", line)
        if m:
            place, name = m.group(1), m.group(2)
            continue
        m = re.search(r"note: (\d+) lines including", line)
        if m and name:
            found.append((int(m.group(1)), place, name))
            name = None
    return found


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    build, threshold = sys.argv[1], int(sys.argv[2])
    found = []
    for path in sys.argv[3:]:
        found += long_functions(build, threshold, path)
    for lines, place, name in sorted(found, reverse=True):
        print(lines, place.replace("/work/main/", ""), name)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
