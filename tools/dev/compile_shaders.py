#!/usr/bin/env python3
"""Offline shader step: glsl/*.comp -> spirv_cache/*.spv + spirv_cache/manifest.json.

Each .comp compiles to one SPIR-V module per variant. Variants are declared
in the shader's leading comment lines:

    // @variant NAME [MACRO=VALUE ...]

A shader without such lines has one variant named after the file. Every
module is checked with spirv-val. The manifest records, per module, the
source, the macros, the SHA-256 of the .comp and of every file it includes
(from glslang's depfile), the SHA-256 of the module, and once the compiler
version and flags. The library embeds the cache, so building vkblr needs no
shader compiler; `--check` (a test) fails when a source no longer matches
the manifest (a stale cache).

Usage:
    compile_shaders.py --glsl DIR --out DIR [--glslang PATH] [--spirv-val PATH]
    compile_shaders.py --glsl DIR --out DIR --check
"""
import argparse
import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

# Flags of every module: Vulkan 1.3 (SPIR-V 1.6), no debug info, no optimiser
# (the drivers optimise; glslang's optimiser would only hide the source).
FLAGS = ["-V", "--target-env", "vulkan1.3", "-g0"]
VARIANT_RE = re.compile(r"^//\s*@variant\s+(\w+)((?:\s+\w+=\S+)*)\s*$")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def variants(comp):
    """[(name, {macro: value})] declared by a .comp file."""
    out = []
    with open(comp, encoding="utf-8") as f:
        for line in f:
            m = VARIANT_RE.match(line.strip())
            if m:
                defs = dict(d.split("=", 1) for d in m.group(2).split())
                out.append((m.group(1), defs))
    if not out:
        out.append((os.path.splitext(os.path.basename(comp))[0], {}))
    return out


def sources(glsl_dir):
    return sorted(f for f in os.listdir(glsl_dir) if f.endswith(".comp"))


def compiler_version(glslang):
    out = subprocess.run([glslang, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Glslang Version:\s*(\S+)", out)
    return "glslang " + (m.group(1) if m else out.splitlines()[0].strip())


def parse_depfile(path, glsl_dir):
    """Files a module was built from, relative to glsl_dir, sorted."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    deps = text.split(":", 1)[1].split()
    rel = {os.path.relpath(os.path.abspath(d), glsl_dir) for d in deps}
    return sorted(rel)


def compile_all(args):
    glsl_dir = os.path.abspath(args.glsl)
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    version = compiler_version(args.glslang)
    modules = {}
    with tempfile.TemporaryDirectory() as tmp:
        for comp in sources(glsl_dir):
            for name, defs in variants(os.path.join(glsl_dir, comp)):
                if name in modules:
                    sys.exit(f"compile_shaders: variant name {name} used twice ({comp})")
                spv = os.path.join(out_dir, name + ".spv")
                dep = os.path.join(tmp, name + ".d")
                cmd = [args.glslang, *FLAGS, "-I" + glsl_dir]
                cmd += [f"-D{k}={v}" for k, v in sorted(defs.items())]
                cmd += ["--depfile", dep, "-o", spv, os.path.join(glsl_dir, comp)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"compile_shaders: {comp} ({name}) failed:\n{r.stdout}{r.stderr}")
                r = subprocess.run([args.spirv_val, "--target-env", "vulkan1.3", spv], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"compile_shaders: spirv-val rejects {name}.spv:\n{r.stdout}{r.stderr}")
                inputs = {f: sha256(os.path.join(glsl_dir, f)) for f in parse_depfile(dep, glsl_dir)}
                modules[name] = {
                    "source": comp,
                    "defines": dict(sorted(defs.items())),
                    "inputs": inputs,
                    "spirv_sha256": sha256(spv),
                }
                print(f"  {name:24s} <- {comp}")
    for f in os.listdir(out_dir):
        if f.endswith(".spv") and f[:-4] not in modules:
            os.remove(os.path.join(out_dir, f))
            print(f"  removed stale {f}")
    manifest = {"compiler": version, "flags": FLAGS, "modules": dict(sorted(modules.items()))}
    tmp_manifest = os.path.join(out_dir, "manifest.json.tmp")
    with open(tmp_manifest, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp_manifest, os.path.join(out_dir, "manifest.json"))
    print(f"compile_shaders: {len(modules)} modules with {version}")


def check(args):
    """Exit non-zero when glsl/ and the cache disagree."""
    glsl_dir = os.path.abspath(args.glsl)
    out_dir = os.path.abspath(args.out)
    try:
        with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"stale SPIR-V cache: cannot read the manifest ({e}); run the `spirv` target")
    problems = []
    declared = {}
    for comp in sources(glsl_dir):
        for name, defs in variants(os.path.join(glsl_dir, comp)):
            declared[name] = (comp, defs)
    modules = manifest.get("modules", {})
    for name in sorted(set(declared) - set(modules)):
        problems.append(f"{name} ({declared[name][0]}) is not in the cache")
    for name in sorted(set(modules) - set(declared)):
        problems.append(f"{name} is in the cache but no .comp declares it")
    for name, entry in sorted(modules.items()):
        if name in declared and (declared[name][0] != entry["source"] or declared[name][1] != entry["defines"]):
            problems.append(f"{name}: source or macros changed")
        for rel, digest in entry["inputs"].items():
            path = os.path.join(glsl_dir, rel)
            if not os.path.exists(path):
                problems.append(f"{name}: input {rel} is gone")
            elif sha256(path) != digest:
                problems.append(f"{name}: {rel} changed since the cache was made")
        spv = os.path.join(out_dir, name + ".spv")
        if not os.path.exists(spv) or sha256(spv) != entry["spirv_sha256"]:
            problems.append(f"{name}.spv is missing or differs from the manifest")
    if problems:
        print("stale SPIR-V cache (run: cmake --build <build> --target spirv):", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        sys.exit(1)
    print(f"SPIR-V cache current: {len(modules)} modules ({manifest.get('compiler')})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--glsl", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--glslang", default="glslangValidator")
    ap.add_argument("--spirv-val", default="spirv-val")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.check:
        check(args)
        return
    # one compile at a time per cache (parallel builds, several worktrees)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        compile_all(args)


if __name__ == "__main__":
    main()
