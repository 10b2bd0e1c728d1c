#!/usr/bin/env python3
"""A synthetic slice of an LLM checkpoint for vkblr-fit --manifest: the
linear layers of each of --blocks LLM-shaped blocks, in one
model.safetensors, their calibration inputs in one inputs.safetensors, and
two manifests over them.

    python3 tools/lab/llm_manifest.py --out DIR [--layout llama8b] [--blocks 2]
                                      [--tokens 32768] [--held-out 4096] [--device cuda]

Layers of block b (W is out×in, as nn.Linear stores it), by --layout:
    llama8b (Llama-3-8B's shapes; 4 layers a block)
      model.layers.b.self_attn.o_proj.weight   4096×4096
      model.layers.b.mlp.gate_proj.weight      14336×4096
      model.layers.b.mlp.up_proj.weight        14336×4096
      model.layers.b.mlp.down_proj.weight      4096×14336
    block1k (a small LLM's block: hidden 1024, 4 KV heads of 64, MLP 2816;
      6 layers a block)
      self_attn.q_proj 1024×1024, self_attn.k_proj 256×1024,
      self_attn.o_proj 1024×1024, mlp.gate_proj and mlp.up_proj 2816×1024,
      mlp.down_proj 1024×2816
W: fit_peer.py's `exponential` family (singular values exp(-i/(s/6)) + 0.05
with s the layer's 1-bpw rank, 1 % of the columns ×4), in BF16 as a
checkpoint stores it. X: Gaussian rows with 1/64 of the channels ×8, in F16;
gate_proj and up_proj (and q_proj and k_proj) read the same X, as in the
model. Each input tensor
is named "<module>.input", dump_calibration.py's naming.

DIR/uniform.json fits every layer at 1 bpw; DIR/budget.json sizes none (run
it with --model-bpw). Needs torch and numpy; --device cpu makes the small
layouts on a machine without a GPU (slowly: the llama8b one wants CUDA).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vkblr-fit", "python"))
from fit_peer import family  # noqa: E402
from safetensors_file import RawTensor, write_safetensors  # noqa: E402

LAYOUTS = {  # (module, m, n, which X it reads)
    "llama8b": [
        ("self_attn.o_proj", 4096, 4096, "attn"),
        ("mlp.gate_proj", 14336, 4096, "mlp"),
        ("mlp.up_proj", 14336, 4096, "mlp"),
        ("mlp.down_proj", 4096, 14336, "down"),
    ],
    "block1k": [
        ("self_attn.q_proj", 1024, 1024, "qkv"),
        ("self_attn.k_proj", 256, 1024, "qkv"),
        ("self_attn.o_proj", 1024, 1024, "attn"),
        ("mlp.gate_proj", 2816, 1024, "mlp"),
        ("mlp.up_proj", 2816, 1024, "mlp"),
        ("mlp.down_proj", 1024, 2816, "down"),
    ],
}


def bf16(w: torch.Tensor) -> RawTensor:
    bits = w.to(torch.bfloat16).contiguous().view(torch.int16).cpu().numpy()
    return RawTensor("BF16", tuple(w.shape), bits.astype("<i2").tobytes())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--tokens", type=int, default=32768)
    p.add_argument("--held-out", type=int, default=4096)
    p.add_argument("--layout", choices=sorted(LAYOUTS), default="llama8b")
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    weights, inputs = {}, {}
    rows = a.tokens + a.held_out
    for b in range(a.blocks):
        xs = {}
        for k, (module, m, n, reads) in enumerate(LAYOUTS[a.layout]):
            rank = m * n // (2 * (m + n))  # 2 paths at 1 bpw, scales left out
            w, x = family("exponential", m, n, rows, rank, seed=1000 * b + k + 1, device=a.device)
            name = f"model.layers.{b}.{module}"
            weights[name + ".weight"] = bf16(w)
            xs.setdefault(reads, x.half().cpu().numpy())
            inputs[name + ".input"] = xs[reads]
            del w, x
    write_safetensors(os.path.join(a.out, "model.safetensors"), weights)
    write_safetensors(os.path.join(a.out, "inputs.safetensors"), inputs)

    def manifest(defaults):
        entry = {"weight": "model.safetensors", "activations": "inputs.safetensors",
                 "activations_tensor": "{module}.input"}
        return {"defaults": {"tokens": a.tokens, "held_out": a.held_out, **defaults},
                "layers": [{**entry, "tensors": "model.layers.*.self_attn.*.weight"},
                           {**entry, "tensors": "model.layers.*.mlp.*.weight"}]}
    for file, defaults in (("uniform.json", {"bpw": 1.0}), ("budget.json", {})):
        with open(os.path.join(a.out, file), "w") as f:
            json.dump(manifest(defaults), f, indent=1)
    print(f"{len(weights)} layers of {a.blocks} blocks, {rows} rows of X each, in {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
