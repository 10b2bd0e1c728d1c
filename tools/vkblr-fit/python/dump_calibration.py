#!/usr/bin/env python3
"""Dumps what `vkblr-fit --manifest` needs from a PyTorch model: the weight of
every nn.Linear (or of those whose module name matches a pattern), the
inputs each of them sees on calibration batches, and a manifest over both.

    python3 dump_calibration.py --model MODEL --inputs INPUTS --out DIR
        [--layers PATTERN] [--batch 512] [--max-tokens N] [--dtype f16|f32]
        [--set KEY=VALUE ...] [--seed 0]

MODEL is file.py:FACTORY or package.module:FACTORY (a function that returns
the nn.Module) or a torch.save'd nn.Module; INPUTS a torch.save'd tensor or
list of batches, a .npy array, or a FACTORY that returns them (torch_model.py
says how each is run).
It writes, in DIR:

    weights.safetensors      <module>.weight  [out][in], the Linear's own dtype
    activations.safetensors  <module>.input   [tokens][in], f16 (or --dtype f32)
    job.json                 a manifest: one entry with the pattern
                             "<PATTERN>.weight" and the template "{module}.input",
                             and defaults batch, tokens, held_out (and --set's)

then `vkblr-fit --manifest DIR/job.json --out DIR/compressed` fits every layer.

Tokens: a forward hook flattens each selected Linear's input to rows of
in_features and keeps at most --max-tokens of them per layer (default 9
batches: vkblr-fit's 8 training batches and one held out), each row of the
stream equally likely (reservoir sampling with a generator seeded by
--seed), in the order they arrived; the same batches and seed keep the same
rows, in every layer that sees the same stream of tokens. The manifest's
tokens and held_out are whole batches: held_out one batch (the last rows,
vkblr-fit's held-out tail), tokens as many batches as every layer has before
it. A layer whose in or out features are not multiples of 16 (vkblr-fit's
rule) is left out, with a line saying so.

From your own script, with a Hugging Face model for instance (keep the
batches unpadded: padding tokens would be recorded like any other):

    import sys; sys.path.insert(0, "<vkblr>/tools/vkblr-fit/python")
    from dump_calibration import dump_calibration
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model = AutoModelForCausalLM.from_pretrained(NAME, torch_dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(NAME)
    batches = [tokenizer(text, return_tensors="pt") for text in texts]  # dicts: model(**batch)
    dump_calibration(model, batches, "calib", layers="model.layers.*_proj", batch=4096,
                     settings={"bpw": 1.0})

Files are written atomically (a temporary beside each, renamed over it),
with the `safetensors` package when it is installed and this folder's
writer (safetensors_file.py) otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from command_line import add_model_arguments, parser_from_doc, run  # noqa: E402
from safetensors_file import RawTensor, write_file_atomic, write_safetensors  # noqa: E402
from torch_model import load_batches, load_model, run_model  # noqa: E402

_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64"}


def name_matcher(pattern: str):
    """The manifest's rule (manifest/name_pattern.hpp): '*' is any run of characters, dots
    included, and the name must match as a whole."""
    regex = re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)
    return lambda name: regex.fullmatch(name) is not None


class RowSampler:
    """Keeps at most `capacity` rows of a stream of [k][width] blocks, each row of the stream
    equally likely to be kept (reservoir sampling, Algorithm R); `rows()` returns them in the
    order they arrived. Deterministic: the draws depend only on the seed and the block sizes."""

    def __init__(self, capacity: int, width: int, dtype: torch.dtype, seed: int):
        self.capacity, self.seen = capacity, 0
        self.kept = torch.empty(capacity, width, dtype=dtype)
        self.position = np.zeros(capacity, dtype=np.int64)  # each kept row's place in the stream
        self.rng = np.random.default_rng(seed)

    def add(self, block: torch.Tensor) -> None:
        k = block.shape[0]
        fill = max(0, min(k, self.capacity - self.seen))
        self.kept[self.seen:self.seen + fill] = block[:fill]
        self.position[self.seen:self.seen + fill] = np.arange(self.seen, self.seen + fill)
        later = np.arange(self.seen + fill, self.seen + k)  # positions that may replace a kept row
        if later.size:
            slot = self.rng.integers(0, later + 1)
            chosen = np.nonzero(slot < self.capacity)[0][::-1]  # last first: a later row wins its slot
            slots, first = np.unique(slot[chosen], return_index=True)
            rows = chosen[first] + fill
            self.kept[torch.from_numpy(slots)] = block[torch.from_numpy(rows)]
            self.position[slots] = later[rows - fill]
        self.seen += k

    def rows(self) -> torch.Tensor:
        count = min(self.seen, self.capacity)
        return self.kept[:count][torch.from_numpy(np.argsort(self.position[:count], kind="stable"))]


def torch_raw(t: torch.Tensor) -> RawTensor:
    """A CPU copy of t's values as stored (little-endian: this host's order, checked)."""
    if sys.byteorder != "little":
        raise ValueError("safetensors is little-endian; this host is not")
    if t.dtype not in _DTYPES:
        raise ValueError(f"dtype {t.dtype}: not one vkblr-fit reads ({', '.join(map(str, _DTYPES))})")
    t = t.detach().cpu().contiguous()
    return RawTensor(_DTYPES[t.dtype], tuple(t.shape), t.reshape(-1).view(torch.uint8).numpy().tobytes())


def save_tensors(path: str, tensors: dict, metadata: dict | None = None) -> None:
    """{name: torch tensor} to a safetensors file, atomically."""
    try:
        from safetensors.torch import save as package_save
    except ImportError:
        package_save = None
    if package_save is not None:
        data = package_save({n: t.detach().cpu().contiguous() for n, t in tensors.items()}, metadata)
        write_file_atomic(path, lambda f: f.write(data))
    else:
        write_safetensors(path, {n: torch_raw(t) for n, t in tensors.items()}, metadata)


def select_linears(model: torch.nn.Module, layers):
    """The nn.Linear modules whose names match `layers` (a pattern, a list of them, or None for
    all), and a line for each one vkblr-fit cannot fit."""
    patterns = [layers] if isinstance(layers, str) else list(layers or ["*"])
    matchers = [name_matcher(p) for p in patterns]
    chosen, left_out = {}, []
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear) or not any(m(name) for m in matchers):
            continue
        if module.in_features % 16 or module.out_features % 16:
            left_out.append(f"{name}: left out: {module.out_features}x{module.in_features} "
                            "(out x in) is not a multiple of 16 both ways")
        else:
            chosen[name] = module
    if not chosen:
        raise ValueError(f"no nn.Linear of the model matches {patterns} (and is a multiple of 16 both ways)")
    return chosen, left_out


def dump_calibration(model: torch.nn.Module, batches, out_dir: str, layers=None, batch: int = 512,
                     max_tokens: int | None = None, dtype: torch.dtype = torch.float16,
                     settings: dict | None = None, seed: int = 0, say=print) -> dict:
    """Runs `model` on every batch of `batches` (torch_model.run_model's forms), records the
    inputs of the selected nn.Linear layers and writes weights.safetensors,
    activations.safetensors and job.json into out_dir (see the module's docstring). Returns
    the manifest. Raises ValueError when a layer sees too few tokens for one training and one
    held-out batch, or an input that is not finite (as it is, or in `dtype`)."""
    if batch < 1:
        raise ValueError(f"batch {batch}: must be at least 1")
    max_tokens = max_tokens or 9 * batch
    fixed = {"batch", "tokens", "held_out"} & set(settings or {})
    if fixed:
        raise ValueError(f"setting {sorted(fixed)}: the batch is an argument; tokens and held_out follow from it "
                         "and the rows kept")
    if max_tokens < 2 * batch:
        raise ValueError(f"max_tokens {max_tokens}: below two batches of {batch} (one to train on, one held out)")
    chosen, left_out = select_linears(model, layers)
    for line in left_out:
        say(line)
    samplers = {name: RowSampler(max_tokens, m.in_features, dtype, seed) for name, m in chosen.items()}

    def recorder(name):
        def hook(module, args, kwargs):
            x = (args[0] if args else kwargs["input"]).detach()
            if not torch.isfinite(x).all():
                raise ValueError(f"layer {name}: its input holds NaN or Inf")
            rows = x.reshape(-1, module.in_features).to("cpu", dtype)
            if not torch.isfinite(rows).all():
                raise ValueError(f"layer {name}: an input of |value| {x.abs().max().item():.4g} overflows {dtype} "
                                 "(f16 holds up to 65504, and vkblr-fit stages X to f16): rescale the inputs")
            samplers[name].add(rows)
        return hook

    hooks = [m.register_forward_pre_hook(recorder(name), with_kwargs=True) for name, m in chosen.items()]
    try:
        for b in batches:
            run_model(model, b)
    finally:
        for h in hooks:
            h.remove()

    fewest = min(chosen, key=lambda name: samplers[name].seen)
    kept = min(max_tokens, samplers[fewest].seen)
    if kept < 2 * batch:
        raise ValueError(f"layer {fewest} saw {samplers[fewest].seen} tokens: vkblr-fit needs at least two batches "
                         f"of {batch} (one to train on, one held out); give more inputs or a smaller batch")
    tokens = (kept - batch) // batch * batch
    for name, m in chosen.items():
        say(f"{name}: {m.out_features}x{m.in_features}, {samplers[name].seen} tokens seen, "
            f"{min(max_tokens, samplers[name].seen)} kept")

    os.makedirs(out_dir, exist_ok=True)
    save_tensors(os.path.join(out_dir, "weights.safetensors"), {f"{n}.weight": m.weight for n, m in chosen.items()})
    save_tensors(os.path.join(out_dir, "activations.safetensors"),
                 {f"{n}.input": samplers[n].rows() for n in chosen})
    pattern = layers if isinstance(layers, str) else "*"
    manifest = {"defaults": {"batch": batch, "tokens": tokens, "held_out": batch, **(settings or {})},
                "layers": [{"weight": "weights.safetensors", "tensors": pattern + ".weight",
                            "activations": "activations.safetensors", "activations_tensor": "{module}.input"}]}
    text = json.dumps(manifest, indent=1) + "\n"
    write_file_atomic(os.path.join(out_dir, "job.json"), lambda f: f.write(text.encode()))
    say(f"wrote {out_dir}/weights.safetensors, activations.safetensors, job.json ({len(chosen)} layers; "
        f"tokens {tokens} + held_out {batch}, batch {batch})")
    return manifest


def parse_setting(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"'{text}': want KEY=VALUE (a vkblr-fit manifest setting)")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value  # a word such as f32 or adam


def main(argv=None) -> int:
    parser = parser_from_doc(__doc__)
    add_model_arguments(parser, True, "calibration batches")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--layers", help="pattern of module names ('*' any run of characters; default: all)")
    parser.add_argument("--batch", type=int, default=512, help="vkblr-fit's tokens per step (default 512)")
    parser.add_argument("--max-tokens", type=int, help="rows kept per layer (default 9 batches)")
    parser.add_argument("--dtype", choices=["f16", "f32"], default="f16", help="activations' dtype (default f16)")
    parser.add_argument("--set", type=parse_setting, action="append", default=[], metavar="KEY=VALUE",
                        help="a manifest default, such as bpw=1.5 or steps=2000 (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the rows' choice (default 0)")
    args = parser.parse_args(argv)
    return run("dump_calibration", lambda: dump_calibration(
        load_model(args.model), load_batches(args.inputs, args.rows), args.out, layers=args.layers,
        batch=args.batch, max_tokens=args.max_tokens, dtype=torch.float16 if args.dtype == "f16" else torch.float32,
        settings=dict(args.set), seed=args.seed))


if __name__ == "__main__":
    sys.exit(main())
