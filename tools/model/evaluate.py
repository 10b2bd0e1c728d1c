#!/usr/bin/env python3
"""Held-out perplexity and bits per byte of the reference model, dense and
with vkblr-fit's blr layers swapped in.

    python3 tools/model/evaluate.py --model DIR --corpus .corpus [--blr FILE ...]
        [--context N] [--stride N] [--batch 8] [--documents N] [--device cpu]
        [--json OUT]

DIR is a checkpoint of train_reference.py (checkpoint.py's layout). It
prints (a) the dense model's figures and, with --blr (vkblr-fit model files
or result files, read and checked by load_blr.py; several files, as the
sequential pipeline writes, are merged, a layer named twice refused), (b)
the figures of the model with every blr layer's Ŵ in its nn.Linear, and the
whole model's bits per weight (model_bits.py: blr layers as stored,
everything else at 16 bits).

The measure, the same tokens for every model: the held-out split's stream
(token_data.split_stream: [EOT] d1 [EOT] ... dN [EOT], or only the first N
documents with --documents), every token after the first scored once,
predicted from windows of --context tokens (default the model's
max_position_embeddings) that start --stride tokens apart (default half the
context): a window scores the targets the windows before it did not, so
each is predicted from at least context − stride tokens before it (the
first window's from fewer); the last window ends at the stream's end.
Computed in f32 (no autocast), windows in order, batches of --batch
windows, the sum of the negative log-likelihoods in f64 window by window:
the same model on the same device gives the same numbers. Reported: the
tokens scored (the bytes of the documents plus their EOT tokens), the
bytes, the summed loss, perplexity per token exp(loss / tokens) and bits
per byte loss / (ln 2 · bytes) (the EOT tokens' loss charged to the text).
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "vkblr-fit", "python"))
from byte_tokenizer import EOT, document_stream  # noqa: E402
from checkpoint import load_checkpoint  # noqa: E402
from corpus import read_documents  # noqa: E402
from load_blr import read_blr, replace_linear_weights  # noqa: E402
from model_bits import model_bits  # noqa: E402
from atomic_file import write_json_atomic  # noqa: E402


def window_plan(total: int, context: int, stride: int) -> list:
    """[(begin, first)] for a stream of `total` tokens: window k reads tokens[begin : begin + L]
    (L = min(context, total − 1)) and scores the targets tokens[j] for j in [first, begin + L],
    each predicted from the logits at position j − 1. Together they score every j in
    [1, total − 1] exactly once."""
    if total < 2:
        raise ValueError(f"a stream of {total} tokens has nothing to predict")
    if not 1 <= stride <= context:
        raise ValueError(f"stride {stride}: want 1 ≤ stride ≤ context {context}")
    length = min(context, total - 1)
    plan, begin, scored = [], 0, 0  # scored: the last target scored so far
    while scored < total - 1:
        plan.append((begin, scored + 1))
        scored = begin + length
        begin = min(begin + stride, total - 1 - length)
    return plan


def heldout_tokens(corpus_dir: str, documents: int | None = None) -> tuple:
    docs = read_documents(corpus_dir, "heldout")
    if documents is not None:
        if not 1 <= documents <= len(docs):
            raise ValueError(f"--documents {documents}: the held-out split has {len(docs)}")
        docs = docs[:documents]
    texts = [t for _, t in docs]
    return document_stream(texts), sum(len(t.encode("utf-8")) for t in texts), len(texts)


@torch.no_grad()
def evaluate_tokens(model, tokens: np.ndarray, text_bytes: int, context: int, stride: int, batch: int = 8,
                    device: str = "cpu") -> dict:
    """The figures of the module's docstring for `model` (input ids [B][T] -> logits [B][T][V])."""
    plan = window_plan(tokens.shape[0], context, stride)
    length = min(context, tokens.shape[0] - 1)
    stream = torch.from_numpy(tokens.astype(np.int64))
    model.eval()
    loss, scored, started = 0.0, 0, time.time()
    for at in range(0, len(plan), batch):
        chunk = plan[at:at + batch]
        inputs = torch.stack([stream[b:b + length] for b, _ in chunk]).to(device)
        targets = torch.stack([stream[b + 1:b + 1 + length] for b, _ in chunk]).to(device)
        logits = model(inputs).float()
        nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                                reduction="none").reshape(targets.shape)
        positions = torch.arange(1, length + 1, device=device)[None, :]
        keep = positions >= torch.tensor([first - b for b, first in chunk], device=device)[:, None]
        sums = (nll.double() * keep).sum(dim=1).cpu()
        for k in range(len(chunk)):
            loss += float(sums[k])
        scored += int(keep.sum())
    if scored != tokens.shape[0] - 1:
        raise AssertionError(f"scored {scored} of {tokens.shape[0] - 1} targets")
    eot = int((tokens[1:] == EOT).sum())
    return {"tokens_scored": scored, "eot_tokens": eot, "bytes": text_bytes, "loss_nats": loss,
            "perplexity": math.exp(loss / scored), "bits_per_token": loss / scored / math.log(2),
            "bits_per_byte": loss / (math.log(2) * text_bytes), "context": context, "stride": stride,
            "windows": len(plan), "wall_s": round(time.time() - started, 3)}


def read_blr_files(paths: list) -> dict:
    """The blr layers of several vkblr-fit files, merged; a name in two files is refused."""
    layers = {}
    for path in paths:
        for name, layer in read_blr(path).items():
            if name in layers:
                raise ValueError(f"{path}: layer {name} is in an earlier --blr file too")
            layers[name] = layer
    return layers


def with_blr(model, layers: dict):
    """A copy of `model` with each blr layer's Ŵ in its nn.Linear (load_blr's f64 rebuild, rounded)."""
    swapped = copy.deepcopy(model)
    replace_linear_weights(swapped, layers)
    return swapped


def line(label: str, r: dict) -> str:
    return (f"{label}: perplexity {r['perplexity']:.4f} per token, {r['bits_per_byte']:.4f} bits per byte "
            f"({r['tokens_scored']} tokens, {r['bytes']} bytes, {r['windows']} windows of {r['context']}, "
            f"stride {r['stride']}; {r['wall_s']} s)")


def main(argv=None) -> int:
    first, _, rest = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(description=first, epilog=rest,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="checkpoint directory (config.json, model.safetensors)")
    parser.add_argument("--corpus", required=True, help="corpus directory (make_corpus.py)")
    parser.add_argument("--blr", action="append", default=[], help="vkblr-fit model or result file (repeatable)")
    parser.add_argument("--context", type=int, help="window length (default: the model's positions)")
    parser.add_argument("--stride", type=int, help="window stride (default: context / 2)")
    parser.add_argument("--batch", type=int, default=8, help="windows per forward pass (default 8)")
    parser.add_argument("--documents", type=int, help="only the first N held-out documents")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--json", help="write the figures here as JSON")
    args = parser.parse_args(argv)
    try:
        model = load_checkpoint(args.model).to(args.device)
        context = args.context or model.config.max_position_embeddings
        stride = args.stride or max(1, context // 2)
        if context > model.config.max_position_embeddings or args.batch < 1:
            raise ValueError(f"--context {context}: at most the model's {model.config.max_position_embeddings}; "
                             "--batch at least 1")
        tokens, text_bytes, docs = heldout_tokens(args.corpus, args.documents)
        result = {"model": args.model, "corpus": args.corpus, "documents": docs,
                  "dense": evaluate_tokens(model, tokens, text_bytes, context, stride, args.batch, args.device)}
        shapes = model.config.parameter_shapes()
        result["dense"]["model_bits"] = model_bits(shapes, {})
        print(line("dense", result["dense"]))
        if args.blr:
            layers = read_blr_files(args.blr)
            r = evaluate_tokens(with_blr(model, layers), tokens, text_bytes, context, stride, args.batch,
                                args.device)
            r["model_bits"] = model_bits(shapes, layers)
            r["files"] = args.blr
            result["blr"] = r
            bits = r["model_bits"]
            print(line(f"blr ({len(layers)} layers)", r))
            print(f"blr model: {bits['bpw']:.4f} bits per weight over {bits['weights']} weights "
                  f"(blr layers {bits['blr']['bpw']:.4f} bpw over {bits['blr']['weights']}; "
                  f"{bits['dense']['weights']} dense at 16 bits)")
        if args.json:
            write_json_atomic(args.json, result)
    except (ValueError, OSError) as e:
        print(f"evaluate: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
