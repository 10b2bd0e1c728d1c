#!/usr/bin/env python3
"""nvidia-sass.py — the machine code (SASS) NVIDIA's Vulkan driver made of
vkblr's kernels, read out of a pipeline cache that vkblr saved.

    VKBLR_PIPELINE_CACHE_DIR=/tmp/pc vkblr-bench gemm --shape 4096x3584x1024 --mode plane
    python3 tools/lab/nvidia-sass.py /tmp/pc/pipelines-*.bin --out /tmp/sass [--arch SM90]

For each pipeline in the cache it writes NAME.sass (nvdisasm's listing) and
prints the opcode counts of the whole kernel and of its main loop (the
backward branch whose body holds the most HMMA/HGMMA instructions). Use one
cache directory per kernel of interest: the cache does not name pipelines.

Needs nvdisasm (CUDA toolkit: the `device` tool's machines have it under
/usr/local/cuda/bin) and a zstd decompressor (`zstd` on PATH or --zstd).

The format is NVIDIA's and undocumented; what this reads was seen with driver
580.159.04 (2026-12-03): the cache holds one zstd frame per pipeline; each
decompresses to an "NVDANVVMNVuc" container whose 32-bit fields at 0x4c and
0x50 give the code size and offset, the raw instructions starting 8 bytes
past that offset. A frame that does not fit that layout is reported and
skipped, never guessed at.
"""
import argparse
import collections
import os
import re
import shutil
import struct
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CONTAINER_MAGIC = b"NVDANVVMNVuc"
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)")


def find_tool(name, given):
    path = given or shutil.which(name) or (f"/usr/local/cuda/bin/{name}" if os.path.exists(f"/usr/local/cuda/bin/{name}") else None)
    if not path:
        sys.exit(f"nvidia-sass: {name} not found (give its path)")
    return path


def containers(blob, zstd):
    """Yield the decompressed pipeline containers of a cache blob."""
    for m in re.finditer(re.escape(ZSTD_MAGIC), blob):
        r = subprocess.run([zstd, "-q", "-d", "-c"], input=blob[m.start():], capture_output=True)
        if r.stdout.startswith(CONTAINER_MAGIC):
            yield m.start(), r.stdout


def code_of(container):
    if len(container) < 0x58:
        return None
    size, offset = struct.unpack_from("<II", container, 0x4C)
    begin = offset + 8
    if size == 0 or size % 16 or begin + size > len(container):
        return None
    return container[begin:begin + size]


def instructions(listing):
    """(address, opcode, line) of each instruction of an nvdisasm listing."""
    out = []
    for line in listing.splitlines():
        m = INSTRUCTION.search(line)
        if m:
            out.append((int(m.group(1), 16), m.group(3), line))
    return out


def main_loop(instrs):
    """The backward branch whose body holds the most matrix instructions."""
    best = None
    for addr, op, line in instrs:
        m = re.search(r"BRA (0x[0-9a-f]+)", line)
        if not (op == "BRA" and m) or int(m.group(1), 16) >= addr:
            continue
        head = int(m.group(1), 16)
        body = [i for i in instrs if head <= i[0] <= addr]
        mma = sum(o.startswith(("HMMA", "HGMMA")) for _, o, _ in body)
        if mma and (best is None or mma > best[0]):
            best = (mma, head, addr, body)
    return best


def counts(instrs):
    c = collections.Counter(op for _, op, _ in instrs)
    return ", ".join(f"{op} {n}" for op, n in c.most_common())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", nargs="+", help="pipeline cache files (VKBLR_PIPELINE_CACHE_DIR)")
    ap.add_argument("--out", required=True, help="directory for the listings")
    ap.add_argument("--arch", default="SM90", help="nvdisasm's -b architecture (default SM90: H100/H200)")
    ap.add_argument("--nvdisasm")
    ap.add_argument("--zstd")
    args = ap.parse_args()
    nvdisasm = find_tool("nvdisasm", args.nvdisasm)
    zstd = find_tool("zstd", args.zstd)
    os.makedirs(args.out, exist_ok=True)
    found = 0
    for path in args.cache:
        blob = open(path, "rb").read()
        for index, (at, container) in enumerate(containers(blob, zstd)):
            name = f"{os.path.basename(path).removesuffix('.bin')}-{index}"
            code = code_of(container)
            if code is None:
                print(f"{name}: frame at {at}: not the container layout this tool knows; skipped")
                continue
            raw = os.path.join(args.out, name + ".code")
            open(raw, "wb").write(code)
            r = subprocess.run([nvdisasm, "-b", args.arch, raw], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name}: nvdisasm failed: {r.stderr.strip()[:300]}")
                continue
            open(os.path.join(args.out, name + ".sass"), "w").write(r.stdout)
            found += 1
            instrs = instructions(r.stdout)
            print(f"{name}: {len(code)} bytes, {len(instrs)} instructions: {counts(instrs)}")
            loop = main_loop(instrs)
            if loop:
                _, head, tail, body = loop
                print(f"  main loop {head:#x}..{tail:#x}, {len(body)} instructions: {counts(body)}")
    if not found:
        sys.exit("nvidia-sass: no pipeline code found")


if __name__ == "__main__":
    main()
