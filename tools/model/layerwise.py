#!/usr/bin/env python3
"""Compresses the reference model layer by layer with vkblr-fit and judges
the result by the model: held-out perplexity and bits per byte.

    python3 tools/model/layerwise.py --model DIR --corpus .corpus --fit VKBLR_FIT --out WORK
        (--bpw B | --model-bpw B | --set rank=R) [--sequential] [--layers "model.layers.*_proj"]
        [--batch 4096] [--calibration-tokens N] [--set KEY=VALUE ...] [--seed 1]
        [--device cpu] [--eval-documents N] [--eval-batch 8] [--no-dense-eval] [--resume]

One shot (the default): the calibration text, ceil(N / context) windows of
the training split (token_data.calibration_batches, seeded by --seed; N =
--calibration-tokens, default 9 batches: vkblr-fit's 8 training batches and
one held out), runs through the dense model while dump_calibration.py
records the inputs of every nn.Linear matching --layers (default the seven
projections of every block; the embeddings, norms and lm_head stay dense);
`vkblr-fit --manifest` fits them all (WORK/calib/, WORK/blr.*), uniform at
--bpw B per layer, or with --model-bpw B, B bits per weight over the fitted
layers with the ranks allocated where the error falls fastest.

--sequential (GPTQ-style): block by block, b = 0, 1, ...: the layers of
block b (those of --layers under model.layers.b.) record their inputs from
the model whose blocks before b already hold their blr layers; vkblr-fit
fits them (WORK/block<b>/calib/, WORK/block<b>/blr.*); their Ŵ go into the
model; then block b + 1. With --model-bpw the budget is met block by block
(each block's layers allocated among themselves).

Then evaluate.py's measure (the same held-out tokens for every model) of the
dense model (unless --no-dense-eval) and of the model with every fitted
layer swapped in, and the whole model's bits (model_bits.py). Writes
WORK/report.json (atomically): the settings, vkblr-fit's command lines,
wall times and report totals, the model files, the evaluations and the
bits. vkblr-fit's output goes to WORK/*.log. Exit 1 with a message naming
the file on a bad input or a failed vkblr-fit run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "vkblr-fit", "python"))
from atomic_file import write_json_atomic  # noqa: E402
from checkpoint import load_checkpoint  # noqa: E402
from corpus import CorpusError  # noqa: E402
from dump_calibration import dump_calibration, name_matcher, parse_setting  # noqa: E402
from evaluate import evaluate_tokens, heldout_tokens, read_blr_files, with_blr  # noqa: E402
from load_blr import read_blr_model, replace_linear_weights  # noqa: E402
from model_bits import model_bits  # noqa: E402
from token_data import calibration_batches  # noqa: E402

DEFAULT_LAYERS = "model.layers.*_proj"


def run_fit(fit: str, manifest: str, prefix: str, model_bpw: float | None, log: str, resume: bool = False) -> dict:
    """vkblr-fit --manifest MANIFEST --out PREFIX [--model-bpw B] [--resume], its output in `log`;
    returns its command line, wall time and report totals."""
    command = [fit, "--manifest", manifest, "--out", prefix]
    if model_bpw is not None:
        command += ["--model-bpw", repr(model_bpw)]
    if resume:
        command += ["--resume"]
    started = time.time()
    with open(log, "w") as out:
        rc = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.time() - started
    if rc != 0:
        with open(log) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"{' '.join(command)}: exit {rc}; its output ({log}) ends:\n{tail}")
    with open(prefix + ".json") as f:
        report = json.load(f)
    return {"command": command, "wall_s": round(wall, 2), "totals": report["totals"], "model_file": prefix
            + ".safetensors"}


def fit_one_shot(args, model, batches, settings) -> list:
    calib = os.path.join(args.out, "calib")
    dump_calibration(model, batches, calib, layers=args.layers, batch=args.batch, max_tokens=args.calibration_tokens,
                     settings=settings, seed=args.seed)
    return [run_fit(args.fit, os.path.join(calib, "job.json"), os.path.join(args.out, "blr"), args.model_bpw,
                    os.path.join(args.out, "vkblr-fit.log"), args.resume)]


def fit_sequential(args, model, batches, settings) -> list:
    """Block by block; `model` ends with every fitted layer's Ŵ in it."""
    runs = []
    matches = name_matcher(args.layers)
    for b in range(model.config.num_hidden_layers):
        work = os.path.join(args.out, f"block{b}")
        names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and matches(n)
                 and n.startswith(f"model.layers.{b}.")]
        if not names:
            raise ValueError(f"--layers '{args.layers}' matches no nn.Linear of block {b}")
        dump_calibration(model, batches, os.path.join(work, "calib"), layers=names, batch=args.batch,
                         max_tokens=args.calibration_tokens, settings=settings, seed=args.seed)
        run = run_fit(args.fit, os.path.join(work, "calib", "job.json"), os.path.join(work, "blr"), args.model_bpw,
                      os.path.join(work, "vkblr-fit.log"), args.resume)
        run["block"] = b
        runs.append(run)
        replace_linear_weights(model, read_blr_model(run["model_file"]))
        print(f"layerwise: block {b}: {run['totals']['fitted']} layers fitted in {run['wall_s']} s, "
              f"{run['totals']['bpw']:.4f} bpw; its Ŵ are in the model", flush=True)
    return runs


def layerwise(args) -> dict:
    started = time.time()
    settings = dict(args.set)
    if args.bpw is not None:
        if "bpw" in settings or "rank" in settings:
            raise ValueError("--bpw and --set bpw=/rank=: give one")
        settings["bpw"] = args.bpw
    if args.bpw is None and args.model_bpw is None and not {"bpw", "rank"} & set(settings):
        raise ValueError("the layers' size: give --bpw, --model-bpw, or --set rank=R or bpw=B")
    os.makedirs(args.out, exist_ok=True)
    model = load_checkpoint(args.model).to(args.device)
    context = model.config.max_position_embeddings
    args.calibration_tokens = args.calibration_tokens or 9 * args.batch
    batches = [b.to(args.device) for b in calibration_batches(args.corpus, args.calibration_tokens, context,
                                                              args.seed)]
    fit = fit_sequential if args.sequential else fit_one_shot
    runs = fit(args, model, batches, settings)
    fit_wall = sum(r["wall_s"] for r in runs)
    files = [r["model_file"] for r in runs]
    layers = read_blr_files(files)
    tokens, text_bytes, docs = heldout_tokens(args.corpus, args.eval_documents)
    dense = load_checkpoint(args.model).to(args.device)
    result = {"model": args.model, "corpus": args.corpus, "mode": "sequential" if args.sequential else "one-shot",
              "bpw": args.bpw, "model_bpw": args.model_bpw, "settings": settings, "layers": args.layers,
              "calibration": {"tokens": args.calibration_tokens, "windows": sum(b.shape[0] for b in batches),
                              "context": context, "seed": args.seed, "batch": args.batch},
              "runs": runs, "fit_wall_s": round(fit_wall, 2), "files": files}
    evaluation = {}
    if not args.no_dense_eval:
        evaluation["dense"] = evaluate_tokens(dense, tokens, text_bytes, context, context // 2, args.eval_batch,
                                              args.device)
    evaluation["blr"] = evaluate_tokens(with_blr(dense, layers), tokens, text_bytes, context, context // 2,
                                        args.eval_batch, args.device)
    for r in evaluation.values():
        r["documents"] = docs
    result["evaluation"] = evaluation
    result["model_bits"] = model_bits(dense.config.parameter_shapes(), layers)
    result["wall_s"] = round(time.time() - started, 2)
    write_json_atomic(os.path.join(args.out, "report.json"), result)
    blr, bits = evaluation["blr"], result["model_bits"]
    dense_text = (f"dense {evaluation['dense']['perplexity']:.4f} / {evaluation['dense']['bits_per_byte']:.4f}, "
                  if "dense" in evaluation else "")
    size = f"--model-bpw {args.model_bpw}" if args.model_bpw is not None else \
        ", ".join(f"{k} {settings[k]}" for k in ("bpw", "rank") if k in settings)
    print(f"layerwise ({result['mode']}, {size}): "
          f"{len(layers)} layers fitted in {fit_wall:.1f} s; held-out perplexity / bits per byte: {dense_text}"
          f"blr {blr['perplexity']:.4f} / {blr['bits_per_byte']:.4f} ({blr['tokens_scored']} tokens, "
          f"{blr['bytes']} bytes); blr layers {bits['blr']['bpw']:.4f} bpw, whole model {bits['bpw']:.4f} bpw; "
          f"wrote {args.out}/report.json", flush=True)
    return result


def main(argv=None) -> int:
    first, _, rest = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(description=first, epilog=rest,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="reference checkpoint directory")
    parser.add_argument("--corpus", required=True, help="corpus directory")
    parser.add_argument("--fit", required=True, help="the vkblr-fit binary")
    parser.add_argument("--out", required=True, help="work directory")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--bpw", type=float, help="bits per weight of every layer")
    size.add_argument("--model-bpw", type=float, help="bits per weight over all fitted layers (vkblr-fit's budget)")
    parser.add_argument("--sequential", action="store_true", help="block by block, each calibrated on the "
                        "model whose earlier blocks are already blr")
    parser.add_argument("--layers", default=DEFAULT_LAYERS, help=f"module pattern (default '{DEFAULT_LAYERS}')")
    parser.add_argument("--batch", type=int, default=4096, help="vkblr-fit's tokens per step (default 4096)")
    parser.add_argument("--calibration-tokens", type=int, help="calibration tokens (default 9 batches)")
    parser.add_argument("--set", type=parse_setting, action="append", default=[], metavar="KEY=VALUE",
                        help="a vkblr-fit manifest default, such as steps=500 (repeatable)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the calibration windows and rows")
    parser.add_argument("--device", default="cpu", help="torch device of the model (default cpu)")
    parser.add_argument("--eval-documents", type=int, help="evaluate on the first N held-out documents only")
    parser.add_argument("--eval-batch", type=int, default=8, help="windows per forward pass in the evaluation")
    parser.add_argument("--no-dense-eval", action="store_true", help="evaluate only the compressed model")
    parser.add_argument("--resume", action="store_true", help="pass --resume to vkblr-fit: layers an interrupted "
                        "run finished in the work directory are taken from it (the dump is the same again)")
    args = parser.parse_args(argv)
    try:
        layerwise(args)
    except (ValueError, CorpusError, OSError, RuntimeError) as e:
        print(f"layerwise: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
