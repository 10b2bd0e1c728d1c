"""vkblr-train (tools/vkblr-train/) on the stand-in reference model: the toy
preset trained by train_reference.py on the stand-in corpus
(model_fixture.py), its layers fitted one shot by vkblr-fit (layerwise.py),
then trained together against the dense model.

    python3 pytools_model_train.py --work DIR --fit VKBLR_FIT --read-back READ_BACK --tool train=VKBLR_TRAIN \
        [--tool mpirun="MPIEXEC -n 2 --oversubscribe"]

Checks: a run on export_tokens.py's training windows writes the model file,
report.json and curve.svg; the model file loads with load_blr.py, its
layers are the blr file's names and shapes, and its held-out loss measured
by tools/model/evaluate.py --blr is the report's final figure (within 1e-4
relative: the engine stages the head to f16, evaluate.py runs f32); the
curve has its points at the eval steps with their token counts, starts
from the blr file's figure and ends below it; a run resumed from the
checkpoint of step 3 writes the same model file, byte for byte, and the
same curve as the uninterrupted run; so does a run with activations
recomputed and the teacher run live in every step; the factored blr route
trains to within 2% of the dense route's held-out loss (and its checkpoint
resumes no dense run); with mpirun given, 2 ranks write the
model file of one process with --micro-batches 2; started from vkblr-fit's
Dual-SVID init of the checkpoint (--init dual-svid) instead of a file, it
trains and writes what evaluate.py measures too; a --blr start with its
latents nearer zero (--latent-rms) flips more signs; bad inputs are refused
with their messages (a token past the vocabulary by its row and column,
windows of another length, a float token file, a stream without
--windows, a blr file of another model, a config vkblr does not run, a
checkpoint of other settings, bad option values: exit 2).
"""
import json
import os
import shutil
import shlex
import sys

from pytools_support import REPO, check, main, options, require_modules, run

require_modules("numpy", "torch")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tools", "model"))
from model_fixture import make_fake_deb  # noqa: E402

args = options()
WORK = args.work
TRAIN = args.tool["train"]
CORPUS, REF = os.path.join(WORK, "corpus"), os.path.join(WORK, "ref")
TOKENS = os.path.join(WORK, "tokens")
BLR = os.path.join(WORK, "oneshot", "blr.safetensors")
HELD_OUT = os.path.join(WORK, "heldout1.npy")
STEPS, BATCH, EVERY = 6, 4, 2


def tool(path, *arguments):
    return run([sys.executable, os.path.join(REPO, path), *arguments], cwd=WORK)


def train(out, *extra, expect_rc=0, launcher=()):
    """vkblr-train with the run's flags, `extra` (flag, value pairs) in place of any of them."""
    flags = {"--model": REF, "--blr": BLR, "--train": os.path.join(TOKENS, "train_windows.npy"),
             "--held-out": HELD_OUT, "--held-out-bytes": HELD_OUT_BYTES, "--out": os.path.join(WORK, out),
             "--steps": STEPS, "--batch": BATCH, "--eval-every": EVERY, "--lr": "3e-3", "--warmup": "2"}
    flags.update(zip(extra[::2], extra[1::2]))
    return run([*launcher, TRAIN, *[x for pair in flags.items() if pair[1] is not None for x in pair]],
               expect_rc=expect_rc)


def load_json(path):
    with open(os.path.join(WORK, path)) as f:
        return json.load(f)


def read(path):
    with open(os.path.join(WORK, path), "rb") as f:
        return f.read()


def setup():
    global HELD_OUT_BYTES
    shutil.rmtree(CORPUS, ignore_errors=True)
    tool("tools/model/make_corpus.py", "--deb", make_fake_deb(WORK), "--out", CORPUS, "--min-total-bytes", "1000",
         "--held-out-bytes", "20000")
    tool("tools/model/train_reference.py", "--corpus", CORPUS, "--out", REF, "--preset", "toy", "--steps", "20",
         "--eval-documents", "1")
    tool("tools/model/export_tokens.py", "--corpus", CORPUS, "--out", TOKENS, "--train-windows", "1024", "--context",
         "64")
    tool("tools/model/layerwise.py", "--model", REF, "--corpus", CORPUS, "--fit", args.fit, "--out", "oneshot",
         "--set", "rank=32", "--set", "steps=3", "--batch", "64", "--eval-documents", "1")
    # the held-out measure of evaluate.py --documents 1: its stream and bytes
    from evaluate import heldout_tokens
    tokens, text_bytes, _ = heldout_tokens(CORPUS, 1)
    np.save(HELD_OUT, tokens.astype("<u2"))
    HELD_OUT_BYTES = str(text_bytes)
    train("run", "--checkpoint-every", "3", "--sample", "12", "--prompt", "The ")
    train("resumed", "--resume", os.path.join(WORK, "run", "checkpoint.safetensors"))


def test_the_outputs():
    r = load_json("run/report.json")
    for name in ("blr.safetensors", "report.json", "curve.svg", "checkpoint.safetensors"):
        check(os.path.exists(os.path.join(WORK, "run", name)), f"run/{name} is missing")
    check([p["step"] for p in r["curve"]] == [2, 4, 6], f"curve steps {[p['step'] for p in r['curve']]}")
    check([p["tokens"] for p in r["curve"]] == [s * BATCH * 64 for s in (2, 4, 6)], "curve tokens")
    check(r["steps"] == {"run": STEPS, "applied": STEPS, "skipped": 0, "gscale": 64.0}, f"steps {r['steps']}")
    check(r["final"]["perplexity"] < r["init"]["perplexity"],
          f"trained {r['final']['perplexity']} is not below the blr file's {r['init']['perplexity']}")
    check(r["final"]["perplexity"] > r["teacher"]["perplexity"] * 0.99, "the student beats its teacher by far")
    check(r["teacher_pass"]["cache"] and r["data"]["windows"] == 16, f"teacher {r['teacher_pass']}, data {r['data']}")
    check(r["bits"] == load_json("oneshot/report.json")["model_bits"],
          f"bits {r['bits']} against layerwise's {load_json('oneshot/report.json')['model_bits']}")
    check(len(r["sample"]["student_ids"]) == 12 and len(r["sample"]["teacher_ids"]) == 12, "sample")
    svg = read("run/curve.svg").decode()
    check(svg.count("<polyline") == 1 and "teacher" in svg and "stroke-dasharray" in svg, "curve.svg")


def test_the_model_file_is_what_evaluate_py_measures():
    from load_blr import read_blr
    trained, start = read_blr(os.path.join(WORK, "run", "blr.safetensors")), read_blr(BLR)
    check(sorted(trained) == sorted(start), "the trained file's layers are not the blr file's")
    for name, layer in trained.items():
        check((layer.m, layer.n, layer.rank, len(layer.paths)) ==
              (start[name].m, start[name].n, start[name].rank, len(start[name].paths)), f"{name}: another shape")
    tool("tools/model/evaluate.py", "--model", REF, "--corpus", CORPUS, "--documents", "1", "--blr",
         os.path.join(WORK, "run", "blr.safetensors"), "--json", os.path.join(WORK, "evaluate.json"))
    want = load_json("evaluate.json")["blr"]
    got = load_json("run/report.json")["final"]
    relative = abs(got["loss_nats"] - want["loss_nats"]) / want["loss_nats"]
    print(f"      held-out loss of the written file: vkblr-train {got['loss_nats']:.4f}, evaluate.py "
          f"{want['loss_nats']:.4f} nats ({relative:.1e})")
    check(got["tokens_scored"] == want["tokens_scored"], f"scored {got['tokens_scored']}, {want['tokens_scored']}")
    check(relative < 1e-4, f"loss {got['loss_nats']} against {want['loss_nats']}")


def test_a_dual_svid_start():
    # --init dual-svid: vkblr-fit's init of every projection from the checkpoint itself, then the same training.
    # One path of rank 32: two paths of the toy's 64-wide layers start within 0.2% of the dense model's
    # perplexity, too near it for 4 steps to show progress
    train("dsvid", "--init", "dual-svid", "--rank", "32", "--paths", "1", "--blr", None, "--steps", "4",
          "--eval-every", "4")
    r = load_json("dsvid/report.json")
    check(r["settings"]["init"] == "dual-svid" and r["settings"]["init_paths"] == 1
          and r["bits"]["blr"]["bits"] < load_json("run/report.json")["bits"]["blr"]["bits"],
          f"settings {r['settings']['init']}, {r['settings']['init_paths']} paths, blr bits {r['bits']['blr']['bits']}")
    check(r["final"]["perplexity"] < r["init"]["perplexity"], "no progress from the Dual-SVID start")
    tool("tools/model/evaluate.py", "--model", REF, "--corpus", CORPUS, "--documents", "1", "--blr",
         os.path.join(WORK, "dsvid", "blr.safetensors"), "--json", os.path.join(WORK, "evaluate_dsvid.json"))
    want = load_json("evaluate_dsvid.json")["blr"]["loss_nats"]
    check(abs(r["final"]["loss_nats"] - want) < 1e-4 * want, f"loss {r['final']['loss_nats']} against {want}")
    # the latents all at ±0.1 (--latent-init uniform) train otherwise than at their Dual-SVID magnitudes (the
    # default: the signs of small factor entries start near zero and flip first)
    train("dsvid-uniform", "--init", "dual-svid", "--rank", "32", "--paths", "1", "--blr", None, "--steps", "4",
          "--eval-every", "4", "--latent-init", "uniform")
    u = load_json("dsvid-uniform/report.json")
    check(r["settings"]["latent_init"] == "magnitude" and u["settings"]["latent_init"] == "uniform",
          f"latent_init {r['settings']['latent_init']}, {u['settings']['latent_init']}")
    check(u["init"] == r["init"], "the two runs started from other layers")
    check(r["flips"] > u["flips"], f"flips: magnitude {r['flips']}, uniform {u['flips']}")
    check(read("dsvid-uniform/blr.safetensors") != read("dsvid/blr.safetensors"), "the same model file")


def test_the_blr_latent_start():
    # --latent-rms with --blr: every latent starts at ±this (0.1 by default); near zero, more signs flip
    train("near", "--latent-rms", "0.001")
    r, near = load_json("run/report.json"), load_json("near/report.json")
    check(abs(r["settings"]["latent_rms"] - 0.1) < 1e-6 and abs(near["settings"]["latent_rms"] - 0.001) < 1e-9,
          f"latent_rms {r['settings']['latent_rms']}, {near['settings']['latent_rms']}")
    check(near["init"] == r["init"], "the two runs started from other layers")
    check(near["flips"] > r["flips"], f"flips: at 0.001 {near['flips']}, at 0.1 {r['flips']}")


def test_resume_is_the_uninterrupted_run():
    check(read("resumed/blr.safetensors") == read("run/blr.safetensors"), "the resumed run's model file differs")
    a, b = load_json("run/report.json"), load_json("resumed/report.json")
    strip = [{k: v for k, v in p.items() if k != "train_s"} for p in a["curve"]]
    check(strip == [{k: v for k, v in p.items() if k != "train_s"} for p in b["curve"]], "the curves differ")
    check(a["loss"] == b["loss"] and a["init"] == b["init"] and a["teacher"] == b["teacher"], "losses or figures")


def test_the_memory_plan_and_the_teacher_pass_change_no_bit():
    # activations recomputed block by block and the teacher's forward in every step instead of its cache
    train("live", "--memory", "recompute", "--teacher", "live")
    check(read("live/blr.safetensors") == read("run/blr.safetensors"),
          "--memory recompute --teacher live wrote another model file than keep with the cache")
    check(not load_json("live/report.json")["teacher_pass"]["cache"], "the teacher was cached")


def test_the_factored_route_trains_alike():
    # the blr layers path by path instead of through Ŵ: the same gradients to f16 rounding, other bits
    train("factored", "--blr-route", "factored")
    a, b = load_json("run/report.json"), load_json("factored/report.json")
    check(a["settings"]["blr_route"] == "dense" and b["settings"]["blr_route"] == "factored", "the routes")
    # from the blr file's figure (the curve's first point is step 2's, which a step of noise may top)
    start, dense, factored = b["init"]["loss_nats"], a["curve"][-1]["loss_nats"], b["curve"][-1]["loss_nats"]
    check(b["init"] == a["init"], "the two routes started from other layers")
    check(factored < start, f"the factored route did not train: {start} -> {factored}")
    check(abs(factored - dense) <= 0.02 * dense, f"held-out loss: dense {dense}, factored {factored}")
    refusal(1, "was made by another run: blr_route", "--blr-route", "factored", "--resume",
            os.path.join(WORK, "run", "checkpoint.safetensors"))


def test_ranks_are_one_process_with_micro_batches():
    if "mpirun" not in args.tool:
        print("      (no mpirun given: not run)")
        return
    short = ("--steps", "4", "--eval-every", "4")
    train("micro", "--micro-batches", "2", *short)
    train("ranks", *short, launcher=shlex.split(args.tool["mpirun"]))
    check(read("ranks/blr.safetensors") == read("micro/blr.safetensors"),
          "2 ranks and one process with 2 micro-batches wrote different model files")
    check(load_json("ranks/report.json")["curve"][-1]["loss_nats"] == load_json("micro/report.json")["curve"][-1]["loss_nats"],
          "2 ranks and one process with 2 micro-batches measured differently")


def refusal(expect_rc, want, *extra, **named):
    p = train("refused", *extra, expect_rc=expect_rc, **named)
    check(want in p.stderr, f"'{want}' not in: {p.stderr[-600:]}")


def test_bad_inputs_are_refused():
    windows = np.load(os.path.join(TOKENS, "train_windows.npy"))
    bad = windows.copy()
    bad[3, 7] = 300
    np.save(os.path.join(WORK, "bad_ids.npy"), bad)
    refusal(1, "token 199 (row 3, column 7) is 300, outside the vocabulary of 272", "--train",
            os.path.join(WORK, "bad_ids.npy"))
    np.save(os.path.join(WORK, "short.npy"), windows[:, :32])
    refusal(1, "windows of 32 tokens, but the context is 64", "--train", os.path.join(WORK, "short.npy"))
    np.save(os.path.join(WORK, "float.npy"), windows.astype(np.float32))
    refusal(1, "dtype '<f4' is not supported", "--train", os.path.join(WORK, "float.npy"))
    refusal(1, "is a 1-D stream of", "--train", os.path.join(TOKENS, "train.npy"))
    np.save(os.path.join(WORK, "few.npy"), windows[:3])
    refusal(1, "--batch 4: the training data has 3 windows", "--train", os.path.join(WORK, "few.npy"))
    # a blr file of another model: the same names, other shapes
    from checkpoint import save_checkpoint
    from llama import LlamaConfig, LlamaForCausalLM
    wide = LlamaForCausalLM(LlamaConfig.preset("toy", intermediate_size=256))
    wide.initialize(3)
    save_checkpoint(wide, os.path.join(WORK, "wide"))
    refusal(1, "blr layer 'model.layers.0.mlp.down_proj.weight' is 64x128, the projection 64x256", "--model",
            os.path.join(WORK, "wide"))
    # gradients no loss scale keeps finite (a final norm of 1e30): the run stops at the smallest scale, 2^-24,
    # 30 halvings after the first scale, 64
    import torch
    from checkpoint import load_checkpoint
    huge = load_checkpoint(REF)
    with torch.no_grad():
        huge.model.norm.weight.fill_(1e30)
    save_checkpoint(huge, os.path.join(WORK, "huge"))
    refusal(1, "step 31: the gradients hold NaN or Inf even at the smallest loss scale", "--model",
            os.path.join(WORK, "huge"), "--steps", "40", "--eval-every", "40")
    # a config vkblr does not run
    shutil.copytree(REF, os.path.join(WORK, "gelu"), dirs_exist_ok=True)
    config = load_json("gelu/config.json")
    config["hidden_act"] = "gelu"
    with open(os.path.join(WORK, "gelu", "config.json"), "w") as f:
        json.dump(config, f)
    refusal(1, "'hidden_act'", "--model", os.path.join(WORK, "gelu"))
    # a checkpoint of other settings, and a file that is no checkpoint
    refusal(1, "was made by another run: scale_lr 0.003", "--lr", "1e-3", "--resume",
            os.path.join(WORK, "run", "checkpoint.safetensors"))
    refusal(1, "checkpoint", "--resume", BLR)
    # the held-out text's bytes: neither given nor beside the stream
    p = run([TRAIN, "--model", REF, "--blr", BLR, "--train", os.path.join(TOKENS, "train_windows.npy"), "--held-out",
             HELD_OUT, "--out", os.path.join(WORK, "refused")], expect_rc=1)
    check("give --held-out-bytes N" in p.stderr, p.stderr)
    # usage
    refusal(2, "--batch 4: not a multiple of --micro-batches 3", "--micro-batches", "3")
    refusal(2, "--warmup 9: want fewer warm-up steps than --steps 6", "--warmup", "9")
    refusal(2, "--lr -1: want a learning rate in [0, 1]", "--lr", "-1")
    refusal(2, "--memory", "--memory", "most")
    refusal(2, "--blr-route", "--blr-route", "sparse")
    refusal(2, "--latent-init sideways: want magnitude or uniform", "--latent-init", "sideways")
    refusal(2, "--latent-rms 0: --blr's latents start at ±this; want it above 0", "--latent-rms", "0")
    refusal(2, "--prompt and --prompt-ids", "--sample", "4", "--prompt", "a", "--prompt-ids", "1,2")
    refusal(2, "--blr and --init: give one of them", "--init", "dual-svid", "--rank", "32")
    refusal(2, "--init dual-svid: give the layers' size, --bpw B or --rank R", "--init", "dual-svid", "--blr", None)
    refusal(1, "layer model.layers.0.self_attn.q_proj.weight (64x64): --bpw 1: too low", "--init", "dual-svid",
            "--bpw", "1", "--blr", None)


setup()
main({name: f for name, f in globals().items() if name.startswith("test_")})
