#!/usr/bin/env python3
# torch-loss-adamw.py [--quick] — PyTorch's time for the shapes of
# `vkblr-bench loss` and `vkblr-bench adamw` (docs/kernels.md, "Losses over
# a vocabulary in slices" and "Optimizer ops"), to hold vkblr's figures
# against; run on the `device` tool's GPU. Prints one JSON object on stdout
# (progress on stderr).
#
# loss: one training step of the output head, value and both gradients
#   (dh, dW), for tokens,hidden,vocab = 4096,512,272 (the reference model),
#   4096,896,151936 (Qwen-0.5B-class), 4096,4096,128256 (Llama-8B-class):
#   ce  cross-entropy of h·Wᵀ against token ids;
#   kl  τ²·KL(softmax(z_T/τ) ‖ softmax(z/τ)) against a teacher head of the
#       same width (τ = 2; the teacher under no_grad).
#   The logits GEMMs in f16 with f32 accumulation as vkblr's (autocast), the
#   softmax in f32; the whole tokens × vocab logits are materialised (what
#   PyTorch does; vkblr never holds them). Modes: eager; torch.compile of
#   the step (default mode: Inductor may fuse the softmax and its gradient);
#   eager captured in one CUDA graph (launch overhead gone).
#   Reports ms per step and the effective rate 6·N·V·H (+ 2·N·V·H_T) FLOPs
#   over it: the same figure `vkblr-bench loss` prints as "TFLOP/s effective".
# adamw: one AdamW step (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay
#   0.1) over n f32 parameters with a bf16 copy written after it (what
#   `vkblr-bench adamw --copy bf16` does): the reference model's embedding
#   (272·512 = 139264), a Qwen-0.5B-class embedding (151936·896), a
#   Llama-8B-class one (128256·4096), and 1M. Modes: foreach (eager),
#   fused=True (one CUDA kernel per group), torch.compile of the step, the
#   fused step in a CUDA graph (capturable=True). GB/s counted as vkblr
#   counts them: 28 bytes per entry (w, g, m1, m2 read; w, m1, m2 written)
#   + 2 for the copy.
#
# Timing: CUDA events around `inner` calls, median of `reps` such runs after
# warm-up.
import argparse, json, statistics, sys, time
import torch
import torch.nn.functional as F

dev = "cuda"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def time_ms(fn, reps=20, inner=5, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) / inner)
    return statistics.median(t)


def graphed(fn, warmup=3):
    """fn captured in a CUDA graph (after warm-up on a side stream); returns replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def loss_value(kind, h, w, targets, th, tw, tau):
    """The mean loss; the logits GEMMs in f16 (f32 accumulation), the rest in f32."""
    with torch.autocast("cuda", dtype=torch.float16):
        z = F.linear(h, w)
        if kind == "kl":
            with torch.no_grad():
                zt = F.linear(th, tw)
    z = z.float()
    if kind == "ce":
        return F.cross_entropy(z, targets)
    ls = F.log_softmax(z / tau, dim=-1)
    lt = F.log_softmax(zt.float() / tau, dim=-1)
    return F.kl_div(ls, lt, log_target=True, reduction="batchmean") * (tau * tau)


def loss_step(value_fn, kind, h, w, targets, th, tw, tau):
    """The loss and (dh, dW): value_fn eager or compiled (AOTAutograd compiles its backward too)."""
    loss = value_fn(kind, h, w, targets, th, tw, tau)
    dh, dw = torch.autograd.grad(loss, (h, w))
    return loss, dh, dw


def bench_loss(kind, tokens, hidden, vocab, reps, inner):
    g = torch.Generator(device=dev).manual_seed(1)
    h = (torch.rand(tokens, hidden, device=dev, generator=g) * 2 - 1).requires_grad_()
    w = ((torch.rand(vocab, hidden, device=dev, generator=g) * 2 - 1) * 0.05).requires_grad_()
    targets = (torch.arange(tokens, device=dev) * 7919) % vocab
    th = tw = None
    if kind == "kl":
        th = torch.rand(tokens, hidden, device=dev, generator=g) * 2 - 1
        tw = (torch.rand(vocab, hidden, device=dev, generator=g) * 2 - 1) * 0.05
    tau = 2.0
    flops = 6 * tokens * vocab * hidden + (2 * tokens * vocab * hidden if kind == "kl" else 0)
    out = {"kind": kind, "tokens": tokens, "hidden": hidden, "vocab": vocab,
           "teacher_hidden": hidden if kind == "kl" else 0, "model_gflop": flops / 1e9}
    step = lambda: loss_step(loss_value, kind, h, w, targets, th, tw, tau)
    modes = [("eager", step)]
    try:
        compiled_value = torch.compile(loss_value)
        compiled = lambda: loss_step(compiled_value, kind, h, w, targets, th, tw, tau)
        compiled()
        modes.append(("compile", compiled))
    except Exception as e:  # noqa: BLE001 — report, go on
        out["compile_error"] = repr(e)[:300]
    try:
        modes.append(("cuda_graph", graphed(step)))
    except Exception as e:  # noqa: BLE001
        out["cuda_graph_error"] = repr(e)[:300]
    for name, fn in modes:
        try:
            ms = time_ms(fn, reps, inner)
            out[name] = {"ms": ms, "effective_tflops": flops / ms / 1e9}
            log(f"loss {kind} {tokens},{hidden},{vocab} {name}: {ms:.3f} ms, {flops / ms / 1e9:.1f} TFLOP/s effective")
        except Exception as e:  # noqa: BLE001 (out of memory at the largest shapes)
            out[name] = {"error": repr(e)[:300]}
            log(f"loss {kind} {tokens},{hidden},{vocab} {name}: {e!r}"[:300])
        torch.cuda.empty_cache()
    out["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    return out


def bench_adamw(n, reps, inner):
    out = {"n": n, "bytes_per_step": 30 * n}
    for mode in ("foreach", "fused", "compile", "cuda_graph"):
        p = torch.nn.Parameter(torch.rand(n, device=dev) * 2 - 1)
        p.grad = torch.rand(n, device=dev) * 2e-3 - 1e-3
        copy = torch.empty(n, device=dev, dtype=torch.bfloat16)
        kw = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
        try:
            if mode == "foreach":
                opt = torch.optim.AdamW([p], foreach=True, **kw)
            elif mode == "fused":
                opt = torch.optim.AdamW([p], fused=True, **kw)
            elif mode == "compile":
                opt = torch.optim.AdamW([p], foreach=True, **kw)
            else:
                opt = torch.optim.AdamW([p], fused=True, capturable=True, **kw)

            def step():
                opt.step()
                copy.copy_(p.detach())

            fn = step
            if mode == "compile":
                fn = torch.compile(step)
                fn()
            elif mode == "cuda_graph":
                fn = graphed(step)
            ms = time_ms(fn, reps, inner)
            out[mode] = {"ms": ms, "gbs": 30 * n / ms / 1e6}
            log(f"adamw n={n} {mode}: {ms:.4f} ms, {30 * n / ms / 1e6:.0f} GB/s")
        except Exception as e:  # noqa: BLE001
            out[mode] = {"error": repr(e)[:300]}
            log(f"adamw n={n} {mode}: {e!r}"[:300])
        del p, copy
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description="PyTorch times for vkblr-bench loss and adamw (see the header)")
    ap.add_argument("--quick", action="store_true", help="small shapes, few reps: a smoke run")
    a = ap.parse_args()
    reps, inner = (3, 1) if a.quick else (20, 5)
    loss_cases = [(4096, 512, 272), (4096, 896, 151936), (4096, 4096, 128256)]
    adam_sizes = [139264, 1 << 20, 151936 * 896, 128256 * 4096]
    if a.quick:
        loss_cases = [(256, 64, 272), (256, 64, 4096)]
        adam_sizes = [139264, 1 << 20]
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "loss": [], "adamw": []}
    for kind in ("ce", "kl"):
        for c in loss_cases:
            report["loss"].append(bench_loss(kind, *c, reps, inner))
    for n in adam_sizes:
        report["adamw"].append(bench_adamw(n, reps, inner))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
