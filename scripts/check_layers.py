#!/usr/bin/env python3
"""Lists every #include inside the framework that runs back up: a file of a lower layer including one
of a higher layer. Exits 1 when there is one. Usage: check_layers.py [SOURCE_DIR]

A source file's layer is its folder's (framework/src/<folder>/, framework/reference_math/). A public
header (framework/include/rematkit/...) is flat, so it takes the folder of the source file that
implements it: the .cpp of the same name, else the .cpp whose first include it is; the few headers
that no .cpp implements are named in HEADER_LAYERS. Files of one layer may include each other."""
import pathlib
import re
import sys

# Lowest first: a file may include its own layer's files and those of the layers before it.
LAYERS = [
    ["ir"],
    ["reference_math"],
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

# Public headers with no .cpp of their own, by the folder they belong to.
HEADER_LAYERS = {
    "rematkit/backend_options.hpp": "plugin",
    "rematkit/buffer_alignment.hpp": "plugin",
    "rematkit/cond_linearization.hpp": "autodiff",
    "rematkit/scan_linearization.hpp": "autodiff",
    "rematkit/gradient_result.hpp": "autodiff",
    "rematkit/gradient.hpp": "autodiff",  # run_gradient.cpp
    "rematkit/interpreter.hpp": "interpreter",
    "rematkit/policy.hpp": "policy",
    "rematkit/rematkit.hpp": "api",  # the umbrella header: everything
}

# Known arrows, each with what removes it; the check fails on any other.
KNOWN = {
    # round_to_dtype (interpreter, over the reference math) rounds literals as they are read: it and
    # Arithmetic belong in an ir header once the reference math sits below ir.
    ("framework/src/ir/parser.cpp", "rematkit/tensor.hpp"),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent).resolve()
    framework = root / "framework"
    public = framework / "include"
    reference_public = framework / "reference_math" / "include"
    include_dirs = [public, reference_public]

    def folder_of(path):
        rel = path.relative_to(framework).parts
        if rel[0] == "src":
            return rel[1]
        if rel[0] == "reference_math":
            return "reference_math"
        return None  # a public header

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

    # Public headers: by the .cpp of the same name, else by the .cpp whose first include they are.
    header_folder = {}
    for header in headers:
        key = header.relative_to(public).as_posix()
        if key in HEADER_LAYERS:
            header_folder[header] = HEADER_LAYERS[key]
            continue
        same_name = [s for s in sources if s.suffix == ".cpp" and s.stem == header.stem]
        first = [s for s in sources if s.suffix == ".cpp" and next(iter(includes(s)), (None, None))[1] == header]
        owners = {folder_of(s) for s in (same_name or first)}
        if len(owners) != 1:
            print(f"check_layers: {key}: no single folder implements it ({sorted(owners)}); name it in HEADER_LAYERS")
            return 2
        header_folder[header] = owners.pop()

    def folder(path):
        return header_folder.get(path) or folder_of(path)

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
