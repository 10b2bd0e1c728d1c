#!/usr/bin/env python3
# cublas-blr-gemms.py OUT.json — a reference for docs/benchmarks.md, run on
# the `device` tool's H200 (its python3 has PyTorch): cuBLAS's time for the
# twelve f16 GEMMs of one blr step of each of issue 5's cases (2 paths, 4096
# tokens; per path a = xg·S_V, c = (a⊙ℓ)·S_Uᵀ, b = (dy⊙h)·S_U,
# dx' = (b⊙ℓ)·S_Vᵀ, G_U = dyᵀ·a, G_V = xᵀ·b), each alone and all twelve in
# one CUDA graph: median of 30 timed graph replays (10 or 3 repetitions
# each) after warm-up, CUDA events. Random f16 inputs, signs as ±1 f16
# planes (what the PyTorch step of the issue multiplies).
import json, statistics, sys, torch
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
dev = "cuda"
def med_ms(fn, reps=30, inner=10):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(inner): fn()
    for _ in range(5): g.replay()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record(); g.replay(); b.record(); b.synchronize()
        t.append(a.elapsed_time(b) / inner)
    return statistics.median(t)
out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": []}
for (m, n, r, T, P) in [(3584,1024,512,4096,2),(1024,3584,512,4096,2),(6144,1024,512,4096,2),(1024,1024,256,4096,2)]:
    h = lambda *s: torch.randn(*s, device=dev, dtype=torch.float16)
    sg = lambda *s: (torch.randint(0, 2, s, device=dev).half() * 2 - 1)
    x, dy = h(T, n), h(T, m)
    paths = []
    for p in range(P):
        paths.append(dict(SU=sg(m, r), SV=sg(n, r), xg=h(T, n), al=h(T, r), dyh=h(T, m), bl=h(T, r), a=h(T, r), b=h(T, r)))
    gemms = []
    for p, q in enumerate(paths):
        gemms += [
            (f"p{p} a = xg.SV", 2*T*n*r, lambda q=q: torch.mm(q["xg"], q["SV"])),
            (f"p{p} c = al.SU^T", 2*T*m*r, lambda q=q: torch.mm(q["al"], q["SU"].t())),
            (f"p{p} b = dyh.SU", 2*T*m*r, lambda q=q: torch.mm(q["dyh"], q["SU"])),
            (f"p{p} dx' = bl.SV^T", 2*T*n*r, lambda q=q: torch.mm(q["bl"], q["SV"].t())),
            (f"p{p} G_U = dy^T.a", 2*T*m*r, lambda q=q: torch.mm(dy.t(), q["a"])),
            (f"p{p} G_V = x^T.b", 2*T*n*r, lambda q=q: torch.mm(x.t(), q["b"])),
        ]
    each = []
    for name, fl, fn in gemms:
        ms = med_ms(fn)
        each.append({"gemm": name, "ms": ms, "tflops": fl / ms / 1e9})
    def all12():
        for _, _, fn in gemms: fn()
    tot = med_ms(all12, inner=3)
    fl = sum(g[1] for g in gemms)
    c = {"m": m, "n": n, "r": r, "ntok": T, "paths": P, "gflop": fl / 1e9,
         "sum_of_each_ms": sum(e["ms"] for e in each), "all_in_one_graph_ms": tot,
         "graph_tflops": fl / tot / 1e9, "each": each}
    out["cases"].append(c)
    print(f"{m}x{n}x{r}: {fl/1e9:.1f} GFLOP, graph {tot:.3f} ms ({fl/tot/1e9:.0f} TF), sum {c['sum_of_each_ms']:.3f} ms", flush=True)
    for e in each: print(f"   {e['gemm']:18s} {e['ms']:.4f} ms {e['tflops']:.0f} TF")
# Calibration: the same harness on issue 4's shapes (act[M][K] · B[N][K]ᵀ,
# random f16 both), against the figures (384 / 447 / 431 / 488 TF).
out["issue4_shapes"] = []
for (M, N, K) in [(4096, 3584, 1024), (4096, 1024, 3584), (3584, 1024, 4096), (4096, 6144, 1024)]:
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(N, K, device=dev, dtype=torch.float16)
    ms = med_ms(lambda: torch.mm(a, b.t()))
    out["issue4_shapes"].append({"m": M, "n": N, "k": K, "ms": ms, "tflops": 2 * M * N * K / ms / 1e9})
    print(f"issue 4 shape {M}x{N}x{K}: {ms:.4f} ms {2*M*N*K/ms/1e9:.0f} TF", flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
