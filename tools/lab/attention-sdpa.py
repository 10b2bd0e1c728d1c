#!/usr/bin/env python3
# attention-sdpa.py [OUT.json] — PyTorch's reference for `vkblr-bench
# attention`: causal self-attention with grouped-query heads through
# torch.nn.functional.scaled_dot_product_attention restricted to the flash
# kernel (SDPBackend.FLASH_ATTENTION, f16 and bf16), forward and forward +
# backward, at vkblr-bench's default cases (B,T,H,KVH,D): the reference
# model (8,1024,8,4,64), Qwen-0.5B-class (4,4096,14,2,64) and
# Llama-8B-class (2,4096,32,8,128). Three ways each:
#   eager     the call as written, timed with CUDA events around `inner`
#             repetitions
#   compile   torch.compile(mode="max-autotune-no-cudagraphs") of the same
#             function
#   graph     the eager call captured in a CUDA graph (`inner` repetitions
#             per replay)
# Medians of 30 timings after warm-up. FLOPs counted as vkblr-bench and
# FlashAttention count them: forward 4·B·H·T²·D/2 (causal), forward +
# backward 3.5 times that. Inputs in vkblr's layouts ([tokens][heads·D]
# rows, as the q/k/v projections produce them) viewed as [B, H, T, D]
# (a transposed view; SDPA's flash kernel takes strided inputs). GQA:
# enable_gqa=True where this PyTorch has it, else k and v repeated
# per query head (timed outside: the repeat is not SDPA's work).
# Prints one JSON object on stdout (and writes it to OUT.json if given).
# SDPA_QUICK=1: f16 only, without torch.compile (a short call's budget).
import json, os, statistics, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

QUICK = os.environ.get("SDPA_QUICK") == "1"
CASES = [(8, 1024, 8, 4, 64), (4, 4096, 14, 2, 64), (2, 4096, 32, 8, 128)]
dev = "cuda"


def med_ms(fn, reps=30, inner=5):
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


def graph_ms(fn, reps=30, inner=5):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) / inner)
    return statistics.median(t)


def has_enable_gqa():
    try:
        x = torch.zeros(1, 2, 1, 8, device=dev, dtype=torch.float16)
        y = torch.zeros(1, 1, 1, 8, device=dev, dtype=torch.float16)
        F.scaled_dot_product_attention(x, y, y, is_causal=True, enable_gqa=True)
        return True
    except TypeError:
        return False


def run_case(B, T, H, KVH, D, dtype, gqa):
    def rows(heads):  # [tokens][heads·D] as the projections produce it, viewed [B, heads, T, D]
        x = torch.randn(B * T, heads * D, device=dev, dtype=dtype)
        return x.view(B, T, heads, D).transpose(1, 2)

    q, k, v = rows(H), rows(KVH), rows(KVH)
    if not gqa:  # k, v per query head, made once
        k = k.repeat_interleave(H // KVH, dim=1)
        v = v.repeat_interleave(H // KVH, dim=1)
    extra = {"enable_gqa": True} if gqa else {}
    qg, kg, vg = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    dout = torch.randn(B, H, T, D, device=dev, dtype=dtype)

    def fwd():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, **extra)

    def step():  # the three gradients as new tensors (no .grad accumulation to time)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True, **extra)
        return torch.autograd.grad(o, (qg, kg, vg), dout)

    flops = 4.0 * B * H * T * T * D / 2
    out = {"batch": B, "seq": T, "heads": H, "kv_heads": KVH, "head_dim": D, "dtype": str(dtype).split(".")[-1],
           "forward_flops": flops, "enable_gqa": gqa}
    with torch.no_grad():
        out["eager_forward_ms"] = med_ms(fwd)
    out["eager_step_ms"] = med_ms(step)
    try:
        if QUICK:
            raise RuntimeError("skipped (SDPA_QUICK=1)")
        cfwd = torch.compile(fwd, mode="max-autotune-no-cudagraphs")
        cstep = torch.compile(step, mode="max-autotune-no-cudagraphs")
        with torch.no_grad():
            for _ in range(3):
                cfwd()
            out["compile_forward_ms"] = med_ms(cfwd)
        for _ in range(3):
            cstep()
        out["compile_step_ms"] = med_ms(cstep)
    except Exception as e:  # report, keep the other timings
        out["compile_error"] = f"{type(e).__name__}: {e}"[:400]
    with torch.no_grad():
        out["graph_forward_ms"] = graph_ms(fwd)
    out["graph_step_ms"] = graph_ms(step)
    for way in ("eager", "compile", "graph"):
        if f"{way}_forward_ms" in out:
            out[f"{way}_forward_tflops"] = flops / out[f"{way}_forward_ms"] / 1e9
        if f"{way}_step_ms" in out:
            out[f"{way}_step_tflops"] = 3.5 * flops / out[f"{way}_step_ms"] / 1e9
    return out


def main():
    gqa = has_enable_gqa()
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": []}
    for dtype in (torch.float16,) if QUICK else (torch.float16, torch.bfloat16):
        for c in CASES:
            r = run_case(*c, dtype, gqa)
            report["cases"].append(r)
            print(f"B={c[0]} T={c[1]} heads={c[2]}/{c[3]} d={c[4]} {r['dtype']}: forward "
                  f"{r['graph_forward_ms']:.3f} ms ({r['graph_forward_tflops']:.0f} TF), forward+backward "
                  f"{r['graph_step_ms']:.3f} ms ({r['graph_step_tflops']:.0f} TF) (CUDA graph)", file=sys.stderr, flush=True)
    text = json.dumps(report, indent=1)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
