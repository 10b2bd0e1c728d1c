#!/usr/bin/env python3
"""Trains the reference language model on the corpus and writes it as a
Hugging Face checkpoint, with a report.

    python3 tools/model/train_reference.py --corpus .corpus --out .model-work/reference
        [--preset reference|toy] [--steps N] [--batch SEQS] [--context T] [--lr 2e-3]
        [--warmup N] [--min-lr-ratio 0.1] [--weight-decay 0.1] [--seed 1]
        [--device auto|cpu|cuda] [--compile auto|on|off] [--max-seconds S]
        [--eval-documents N] [--log-every 50]

The model (llama.py): Llama architecture with Hugging Face's module names;
the `reference` preset has hidden 512, 8 heads of 64, 4 key/value heads, MLP
1536, 8 blocks, 1024 positions and the byte vocabulary of 272
(byte_tokenizer.py): 25.4 M parameters, every linear layer's sides multiples
of 16. `toy` (hidden 64, 2 blocks, 64 positions) runs on a CPU in seconds,
for tests. Flags given override the preset's training defaults:

    preset      steps  batch  context  lr     warmup   tokens
    reference   1500   64     1024     2e-3   100      98.3 M (3.9 passes over the 25.4 MB)
    toy         40     8      64       3e-3   5        20480

Training: windows of `context` tokens of the training stream
(token_data.py) at starts drawn from numpy's PCG64 seeded by --seed, next-
token cross-entropy, AdamW (betas 0.9, 0.95; weight decay on the 2-D
weights), linear warm-up then cosine decay to min-lr-ratio · lr, gradients
clipped to norm 1. On CUDA: bf16 autocast, torch.compile (--compile auto),
fused AdamW; on the CPU: f32, eager. The initial weights come from --seed
(llama.LlamaForCausalLM.initialize). --max-seconds stops the loop early (the
report says so: `stopped_early`); the budget is --steps.

Writes, each file atomically: OUT/config.json, OUT/model.safetensors,
OUT/tokenizer.json, tokenizer_config.json, special_tokens_map.json
(checkpoint.py) and OUT/report.json: parameter counts, training tokens,
wall times (whole run, training loop, evaluation), tokens per second, the
loss curve, held-out perplexity and bits per byte (evaluate.py's measure
over the whole held-out split, or its first --eval-documents documents),
the corpus's package, version and sha256s, the settings, torch's version
and the device.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from atomic_file import write_json_atomic  # noqa: E402
from checkpoint import save_checkpoint  # noqa: E402
from corpus import CorpusError, read_manifest  # noqa: E402
from evaluate import evaluate_tokens, heldout_tokens  # noqa: E402
from llama import LlamaConfig, LlamaForCausalLM  # noqa: E402
from token_data import split_stream  # noqa: E402

TRAINING = {
    "reference": dict(steps=1500, batch=64, context=1024, lr=2e-3, warmup=100),
    "toy": dict(steps=40, batch=8, context=64, lr=3e-3, warmup=5),
}


def learning_rate(step: int, steps: int, lr: float, warmup: int, min_ratio: float) -> float:
    if step < warmup:
        return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * t)))


def resolve(args) -> dict:
    settings = dict(TRAINING[args.preset])
    for key in settings:
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    for key in ("steps", "batch", "context"):
        if settings[key] < 1:
            raise ValueError(f"--{key} {settings[key]}: want at least 1")
    if not 0 <= settings["warmup"] < settings["steps"]:
        raise ValueError(f"--warmup {settings['warmup']}: want 0 ≤ warmup < steps {settings['steps']}")
    if not (settings["lr"] > 0 and math.isfinite(settings["lr"])):
        raise ValueError(f"--lr {settings['lr']}: want a positive number")
    return settings


def train(args) -> dict:
    started = time.time()
    s = resolve(args)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    cuda = device.startswith("cuda")
    use_compile = cuda if args.compile == "auto" else args.compile == "on"
    config = LlamaConfig.preset(args.preset, max_position_embeddings=s["context"])
    corpus = read_manifest(args.corpus)
    stream, train_bytes, train_docs = split_stream(args.corpus, "train")
    if stream.shape[0] <= s["context"]:
        raise ValueError(f"the training stream has {stream.shape[0]} tokens, not more than --context {s['context']}")
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config)
    model.initialize(args.seed)
    model.to(device).train()
    params = sum(p.numel() for p in model.parameters())
    linear = sum(math.prod(shape) for shape in config.linear_shapes().values())
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() != 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=s["lr"], betas=(0.9, 0.95),
                                  eps=1e-8, **({"fused": True} if cuda else {}))
    forward = torch.compile(model) if use_compile else model
    data = torch.from_numpy(stream.astype(np.int64)).to(device)
    rng = np.random.Generator(np.random.PCG64(args.seed))
    offsets = torch.arange(s["context"] + 1, device=device)[None, :]
    curve, stopped_early, loop_started, step = [], False, time.time(), 0
    print(f"train_reference: {params / 1e6:.2f} M parameters ({linear / 1e6:.2f} M in linear layers), "
          f"{train_docs} training documents, {stream.shape[0]} tokens; {s['steps']} steps of {s['batch']} x "
          f"{s['context']} tokens on {device}{' (compiled)' if use_compile else ''}", flush=True)
    for step in range(s["steps"]):
        lr = learning_rate(step, s["steps"], s["lr"], s["warmup"], args.min_lr_ratio)
        for group in optimizer.param_groups:
            group["lr"] = lr
        starts = torch.from_numpy(rng.integers(0, stream.shape[0] - s["context"], size=s["batch"])).to(device)
        window = data[starts[:, None] + offsets]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
            logits = forward(window[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                                 window[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % args.log_every == 0 or step == s["steps"] - 1:
            value = loss.item()
            if not math.isfinite(value):
                raise ValueError(f"step {step}: the loss is {value} (try a lower --lr)")
            elapsed = time.time() - loop_started
            curve.append({"step": step, "loss": value, "lr": lr, "wall_s": round(elapsed, 2)})
            print(f"step {step}: loss {value:.4f} ({value / math.log(2):.3f} bits per token), lr {lr:.2e}, "
                  f"{elapsed:.1f} s", flush=True)
        if args.max_seconds and time.time() - loop_started > args.max_seconds and step < s["steps"] - 1:
            stopped_early = True
            print(f"train_reference: stopped after step {step}: --max-seconds {args.max_seconds}", flush=True)
            break
    if cuda:
        torch.cuda.synchronize()
    loop_s = time.time() - loop_started
    steps_done = step + 1
    model.eval()
    save_checkpoint(model.to("cpu"), args.out)
    model.to(device)
    tokens, text_bytes, docs = heldout_tokens(args.corpus, args.eval_documents)
    evaluation = evaluate_tokens(model, tokens, text_bytes, config.max_position_embeddings,
                                 config.max_position_embeddings // 2, 8, device)
    evaluation["documents"] = docs
    report = {"preset": args.preset, "config": {k: getattr(config, k) for k in config.__dataclass_fields__},
              "parameters": params, "linear_parameters": linear, "settings": {**s, "seed": args.seed,
              "min_lr_ratio": args.min_lr_ratio, "weight_decay": args.weight_decay, "compile": use_compile,
              "autocast": "bf16" if cuda else None},
              "steps_done": steps_done, "stopped_early": stopped_early,
              "training_tokens": steps_done * s["batch"] * s["context"],
              "corpus": {"package": corpus["package"], "version": corpus["version"],
                         "train_sha256": corpus["files"]["train"]["sha256"],
                         "heldout_sha256": corpus["files"]["heldout"]["sha256"], "train_bytes": train_bytes},
              "loop_wall_s": round(loop_s, 2), "tokens_per_s": round(steps_done * s["batch"] * s["context"] / loop_s),
              "heldout": evaluation, "loss_curve": curve, "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if cuda else "cpu"}
    report["wall_s"] = round(time.time() - started, 2)
    write_json_atomic(os.path.join(args.out, "report.json"), report)
    print(f"train_reference: {report['training_tokens']} training tokens in {loop_s:.1f} s "
          f"({report['tokens_per_s']} tokens/s); held-out perplexity {evaluation['perplexity']:.4f}, "
          f"{evaluation['bits_per_byte']:.4f} bits per byte ({evaluation['tokens_scored']} tokens); "
          f"wrote {args.out}/ in {report['wall_s']} s", flush=True)
    return report


def main(argv=None) -> int:
    first, _, rest = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(description=first, epilog=rest,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="corpus directory (make_corpus.py)")
    parser.add_argument("--out", required=True, help="checkpoint directory to write")
    parser.add_argument("--preset", choices=sorted(TRAINING), default="reference")
    parser.add_argument("--steps", type=int)
    parser.add_argument("--batch", type=int, help="sequences per step")
    parser.add_argument("--context", type=int, help="tokens per sequence")
    parser.add_argument("--lr", type=float)
    parser.add_argument("--warmup", type=int)
    parser.add_argument("--min-lr-ratio", type=float, default=0.1)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--compile", choices=["auto", "on", "off"], default="auto")
    parser.add_argument("--max-seconds", type=float, help="stop the training loop after this long")
    parser.add_argument("--eval-documents", type=int, help="evaluate on the first N held-out documents only")
    parser.add_argument("--log-every", type=int, default=50)
    args = parser.parse_args(argv)
    try:
        train(args)
    except (ValueError, CorpusError, OSError) as e:
        print(f"train_reference: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
