#!/usr/bin/env python3
"""Lists every #include inside the framework that runs back up: a file of a lower layer including one
of a higher layer. Exits 1 when there is one. Usage: check_layers.py [SOURCE_DIR]

A file's layer is its folder's: framework/src/<folder>/, framework/reference_math/, and for a public
header framework/include/rematkit/<module>/ (rematkit.hpp, the umbrella, is the api's). Files of one
layer may include each other."""
import pathlib
import re
import sys

# Lowest first: a file may include its own layer's files and those of the layers before it.
LAYERS = [
    ["reference_math"],  # the plugin SDK's element math alone, below everything of the core's
    ["ir"],
    ["interpreter"],
    ["policy"],
    ["autodiff"],
    ["plugin"],  # backends bind graph equations (graph.hpp); autodiff takes policies from policy/ alone
    ["schedule"],
    ["runtime"],
    ["analysis", "api"],
    ["random", "io"],  # rematkit::flax's jax.random and rematkit::io, both over rematkit::core
    ["flax"],
]
LAYER_OF = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}

# Public headers sit in a folder per module (include/rematkit/<module>/), named as the source folders
# but for plugin_host (the plugin SDK owns rematkit/plugin/); rematkit.hpp is the one umbrella.
PUBLIC_FOLDER = {"plugin_host": "plugin"}

# Known arrows, each with what removes it; the check fails on any other.
KNOWN = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent).resolve()
    framework = root / "framework"
    public = framework / "include"
    reference_public = framework / "reference_math" / "include"
    include_dirs = [public, reference_public]

    def folder(path):
        rel = path.relative_to(framework).parts
        if rel[0] == "src":
            return rel[1]
        if rel[0] == "reference_math":
            return "reference_math"
        module = path.relative_to(public / "rematkit").parts
        if len(module) == 1:
            return "api"  # rematkit.hpp, the umbrella: everything
        return PUBLIC_FOLDER.get(module[0], module[0])

    sources = sorted(p for p in (framework / "src").rglob("*") if p.suffix in (".cpp", ".hpp"))
    if (framework / "reference_math").is_dir():
        sources += sorted(p for p in (framework / "reference_math").rglob("*") if p.suffix in (".cpp", ".hpp"))
    headers = sorted(p for p in public.rglob("*.hpp"))
    if not sources or not headers:
        print(f"check_layers: no framework sources under {root}")
        return 2

    def includes(path):
        for name in INCLUDE.findall(path.read_text(encoding="utf-8")):
            for base in [path.parent] + include_dirs:
                target = (base / name).resolve()
                if target.is_file():
                    yield name, target
                    break
            # otherwise a generated export header or the plugin SDK's: below every layer

    unknown = {folder(p) for p in sources + headers} - LAYER_OF.keys()
    if unknown:
        print(f"check_layers: folders with no layer: {sorted(unknown)}")
        return 2

    arrows = known = 0
    for path in sources + headers:
        mine = folder(path)
        for name, target in includes(path):
            theirs = folder(target)
            if LAYER_OF[theirs] > LAYER_OF[mine]:
                listed = (path.relative_to(root).as_posix(), name) in KNOWN
                known += listed
                arrows += not listed
                print(f"{path.relative_to(root)} ({mine}) includes {name} ({theirs}){' (known)' if listed else ''}")
    checked = len(sources) + len(headers)
    print(f"check_layers: {arrows} include(s) run back up, of {checked} files ({known} known)")
    return 1 if arrows else 0


if __name__ == "__main__":
    sys.exit(main())
