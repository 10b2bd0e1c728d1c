"""The reference model's pipeline at toy size (tools/model/): train_reference.py
--preset toy on a stand-in corpus (model_fixture.py), layerwise.py one shot
and --sequential through dump_calibration.py and vkblr-fit --manifest, and
evaluate.py on what they wrote.

    python3 pytools_model_pipeline.py --work DIR --fit VKBLR_FIT --read-back VKBLR_FIT_READ_BACK

Checks: the checkpoint is Hugging Face's Llama layout (config.json's fields,
model.safetensors' names, shapes, dtype and metadata, every linear layer's
sides multiples of 16, the tokenizer files); the model computes Llama's
function (an independent f64 forward from the state dict: RMSNorm, rotary
pairs (i, i + d/2), query head h on key/value head h // group, causal
softmax, SwiGLU); evaluate.py's measure scores every target once and gives
the trainer report's numbers again; the swapped-in model's evaluation EQUALS
that of a dense checkpoint written by hand from Ŵ decoded here from the
model file's bits (which are vkblr-fit's own Ŵ, vkblr-fit-read-back's,
within f64 rounding); the whole model's bits; sequential calibration: block
0 records the dense model's inputs, block 1 those of the model with block
0's blr layers in (recomputed here), not the dense model's; bad inputs are
refused naming the file.
"""
import json
import math
import os
import shutil
import sys

from pytools_support import REPO, check, dense_tolerance, main, options, raises, require_modules, run

require_modules("numpy", "torch")
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tools", "model"))
from checkpoint import load_checkpoint, read_config  # noqa: E402
from evaluate import window_plan  # noqa: E402
from llama import ConfigError  # noqa: E402
from load_blr import layer_bits, read_blr_model, replace_linear_weights  # noqa: E402
from model_fixture import make_fake_deb  # noqa: E402
from safetensors_file import SafetensorsFile, write_safetensors  # noqa: E402
from token_data import calibration_batches  # noqa: E402

args = options()
WORK = args.work
MODEL_TOOLS = os.path.join(REPO, "tools", "model")
CORPUS, REF = os.path.join(WORK, "corpus"), os.path.join(WORK, "ref")
LAYERS = [f"model.layers.{n}.{m}" for n in range(2) for m in ("self_attn.q_proj", "self_attn.k_proj",
          "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")]
FIT_SETTINGS = ["--set", "rank=32", "--set", "steps=4", "--batch", "64", "--eval-documents", "3"]


def tool(name, *arguments, expect_rc=0):
    return run([sys.executable, os.path.join(MODEL_TOOLS, name), *arguments], expect_rc=expect_rc, cwd=WORK)


def setup():
    deb = make_fake_deb(WORK)
    tool("make_corpus.py", "--deb", deb, "--out", CORPUS, "--min-total-bytes", "1000", "--held-out-bytes", "20000")
    tool("train_reference.py", "--corpus", CORPUS, "--out", REF, "--preset", "toy", "--steps", "30",
         "--eval-documents", "3")
    tool("layerwise.py", "--model", REF, "--corpus", CORPUS, "--fit", args.fit, "--out", "oneshot", *FIT_SETTINGS)
    tool("layerwise.py", "--model", REF, "--corpus", CORPUS, "--fit", args.fit, "--out", "seq", "--sequential",
         *FIT_SETTINGS)
    tool("evaluate.py", "--model", REF, "--corpus", CORPUS, "--documents", "3", "--blr",
         "oneshot/blr.safetensors", "--json", "eval.json")
    run([args.read_back, "dense", "oneshot/blr.safetensors", "dense_cpp.safetensors"], cwd=WORK)


def load_json(path):
    with open(os.path.join(WORK, path)) as f:
        return json.load(f)


def test_the_checkpoint_is_hugging_faces_llama():
    config = load_json("ref/config.json")
    want = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 272, "hidden_size": 64,
            "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
            "head_dim": 32, "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "hidden_act": "silu", "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
            "bos_token_id": 256, "eos_token_id": 256, "torch_dtype": "float32", "rope_scaling": None}
    for key, value in want.items():
        check(config.get(key) == value, f"config.json {key} = {config.get(key)!r}, want {value!r}")
    f = SafetensorsFile(os.path.join(REF, "model.safetensors"))
    check(f.metadata == {"format": "pt"}, f"metadata {f.metadata}")
    shapes = {"model.embed_tokens.weight": (272, 64), "model.norm.weight": (64,), "lm_head.weight": (272, 64)}
    for n in range(2):
        p = f"model.layers.{n}."
        shapes.update({p + "self_attn.q_proj.weight": (64, 64), p + "self_attn.k_proj.weight": (32, 64),
                       p + "self_attn.v_proj.weight": (32, 64), p + "self_attn.o_proj.weight": (64, 64),
                       p + "mlp.gate_proj.weight": (128, 64), p + "mlp.up_proj.weight": (128, 64),
                       p + "mlp.down_proj.weight": (64, 128), p + "input_layernorm.weight": (64,),
                       p + "post_attention_layernorm.weight": (64,)})
    check(sorted(f.tensors) == sorted(shapes), f"tensors {sorted(set(f.tensors) ^ set(shapes))}")
    for name, shape in shapes.items():
        t = f.tensors[name]
        check(t.dtype == "F32" and t.shape == shape, f"{t.describe()}, want F32 {list(shape)}")
        if len(shape) == 2 and name != "model.embed_tokens.weight":
            check(shape[0] % 16 == 0 and shape[1] % 16 == 0, f"{name} {shape}: not multiples of 16")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "report.json"):
        check(os.path.isfile(os.path.join(REF, name)), f"{name} is missing")
    report = load_json("ref/report.json")
    check(report["parameters"] == sum(math.prod(s) for s in shapes.values()), f"parameters {report['parameters']}")
    check(report["training_tokens"] == 30 * 8 * 64 and not report["stopped_early"], "training tokens")


def rms(x, w, eps=1e-5):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def reference_logits(state, ids):
    """Llama's forward in f64 from the state dict, head by head (toy sizes: 2 heads of 32, 1 kv head)."""
    s = {k: v.double().numpy() for k, v in state.items()}
    heads, kv_heads, d, t = 2, 1, 32, len(ids)
    x = s["model.embed_tokens.weight"][ids]
    inv = 10000.0 ** (-np.arange(0, d, 2) / d)
    angle = np.arange(t)[:, None] * inv[None, :]  # [t][d/2]: pair (i, i + d/2) turns by angle[:, i]
    cos, sin = np.cos(angle), np.sin(angle)

    def rotate(v):  # v [t][d]
        a, b = v[:, :d // 2], v[:, d // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=1)
    for n in range(2):
        p = f"model.layers.{n}."
        a = rms(x, s[p + "input_layernorm.weight"])
        q, k, v = (a @ s[p + f"self_attn.{w}_proj.weight"].T for w in "qkv")
        out = []
        for h in range(heads):
            g = h // (heads // kv_heads)
            qh, kh, vh = rotate(q[:, h * d:(h + 1) * d]), rotate(k[:, g * d:(g + 1) * d]), v[:, g * d:(g + 1) * d]
            scores = qh @ kh.T / math.sqrt(d) + np.triu(np.full((t, t), -np.inf), 1)
            weights = np.exp(scores - scores.max(1, keepdims=True))
            out.append((weights / weights.sum(1, keepdims=True)) @ vh)
        x = x + np.concatenate(out, axis=1) @ s[p + "self_attn.o_proj.weight"].T
        b = rms(x, s[p + "post_attention_layernorm.weight"])
        gate = b @ s[p + "mlp.gate_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * (b @ s[p + "mlp.up_proj.weight"].T)) @ s[p + "mlp.down_proj.weight"].T
    return rms(x, s["model.norm.weight"]) @ s["lm_head.weight"].T


def test_the_model_computes_llamas_function():
    model = load_checkpoint(REF)
    ids = calibration_batches(CORPUS, 64, 64, 5)[0][0]
    with torch.no_grad():
        got = model(ids[None, :])[0].double().numpy()
    want = reference_logits(model.state_dict(), ids.numpy())
    err = np.abs(got - want).max() / np.abs(want).max()
    check(err < 1e-5, f"logits differ from the f64 reference by {err:.3g} of their largest")


def test_the_measure_scores_every_target_once():
    for total, context, stride in [(2, 64, 32), (65, 64, 32), (66, 64, 32), (1000, 64, 32), (1000, 64, 64),
                                   (1000, 64, 1), (300, 64, 48)]:
        plan = window_plan(total, context, stride)
        length = min(context, total - 1)
        scored = [j for b, first in plan for j in range(first, b + length + 1)]
        check(scored == list(range(1, total)), f"({total}, {context}, {stride}): targets scored {scored[:8]}...")
        check(all(first - b <= context - stride + 1 for b, first in plan[1:] if b + length < total - 1),
              f"({total}, {context}, {stride}): a window scores a target with less than context - stride before it")
    raises(lambda: window_plan(1, 64, 32), "nothing to predict")
    raises(lambda: window_plan(100, 64, 65), "stride 65")
    report, again = load_json("ref/report.json")["heldout"], load_json("eval.json")["dense"]
    for key in ("loss_nats", "perplexity", "bits_per_byte", "tokens_scored", "bytes", "windows"):
        check(report[key] == again[key], f"{key}: the trainer's report {report[key]}, evaluate.py {again[key]}")
    check(again["tokens_scored"] == again["bytes"] + again["eot_tokens"] and again["eot_tokens"] == 3,
          f"tokens {again['tokens_scored']}, bytes {again['bytes']}, EOT {again['eot_tokens']}")


def decode(layer):
    """Ŵ in f64 from the stored bits and scales, decoded here: sign k of a row is bit k % 32 of
    word k // 32 (1 = +1); Ŵ = Σ_p h_p · ((S_U,p · diag(ℓ_p)) (diag(g_p) · S_V,p)ᵀ)."""
    k = np.arange(layer.rank)
    w = np.zeros((layer.m, layer.n))
    for p in layer.paths:
        su = ((p.bits_u[:, k // 32] >> (k % 32).astype(np.uint32)) & 1).astype(np.float64) * 2 - 1
        sv = ((p.bits_v[:, k // 32] >> (k % 32).astype(np.uint32)) & 1).astype(np.float64) * 2 - 1
        w += p.h.astype(np.float64)[:, None] * ((su * p.l.astype(np.float64)) @ (sv * p.g.astype(np.float64)[:, None]).T)
    return w


def test_the_swapped_model_is_the_hand_built_dense_model():
    layers = read_blr_model(os.path.join(WORK, "oneshot", "blr.safetensors"))
    check(sorted(layers) == sorted(f"{n}.weight" for n in LAYERS), f"layers {sorted(layers)}")
    cpp = SafetensorsFile(os.path.join(WORK, "dense_cpp.safetensors"))
    state = {k: v.numpy() for k, v in load_checkpoint(REF).state_dict().items()}
    for name, layer in layers.items():
        w = decode(layer)
        check(np.all(np.abs(w - cpp.array(name)) <= dense_tolerance(layer)), f"{name}: Ŵ is not vkblr-fit's")
        state[name] = w.astype(np.float32)
    hand = os.path.join(WORK, "hand")
    shutil.copytree(REF, hand, dirs_exist_ok=True)
    write_safetensors(os.path.join(hand, "model.safetensors"), state, {"format": "pt"})
    tool("evaluate.py", "--model", hand, "--corpus", CORPUS, "--documents", "3", "--json",
         "hand.json")
    swapped, by_hand = load_json("eval.json")["blr"], load_json("hand.json")["dense"]
    for key in ("loss_nats", "perplexity", "bits_per_byte", "tokens_scored", "bytes"):
        check(swapped[key] == by_hand[key], f"{key}: swapped in {swapped[key]!r}, built by hand {by_hand[key]!r}")
    check(swapped["loss_nats"] != load_json("eval.json")["dense"]["loss_nats"], "the blr layers changed nothing")
    print(f"      dense {load_json('eval.json')['dense']['bits_per_byte']:.5f} bits per byte, "
          f"blr {swapped['bits_per_byte']:.5f} (the hand-built model: {by_hand['bits_per_byte']:.5f})")
    # the layerwise report's evaluation is evaluate.py's
    report = load_json("oneshot/report.json")["evaluation"]["blr"]
    check(report["loss_nats"] == swapped["loss_nats"], "layerwise.py and evaluate.py evaluate differently")


def test_the_whole_models_bits():
    layers = read_blr_model(os.path.join(WORK, "oneshot", "blr.safetensors"))
    bits = load_json("eval.json")["blr"]["model_bits"]
    blr = sum(layer_bits(x.m, x.n, x.rank, len(x.paths), x.scale_dtype) for x in layers.values())
    weights = load_json("ref/report.json")["parameters"]
    dense = weights - sum(x.m * x.n for x in layers.values())
    check(bits["bits"] == blr + 16 * dense and bits["weights"] == weights, f"model bits {bits}")
    check(bits["bpw"] == (blr + 16 * dense) / weights, f"bpw {bits['bpw']}")


def recorded_inputs(model, names):
    """Each named nn.Linear's input rows (f16) over the calibration batches layerwise.py used."""
    rows = {n: [] for n in names}
    hooks = [model.get_submodule(n).register_forward_pre_hook(
        lambda m, a, n=n: rows[n].append(a[0].reshape(-1, a[0].shape[-1]).half())) for n in names]
    with torch.no_grad():
        for b in calibration_batches(CORPUS, 9 * 64, 64, 1):
            model(b)
    for h in hooks:
        h.remove()
    return {n: torch.cat(r).numpy() for n, r in rows.items()}


def test_sequential_calibration():
    oneshot = SafetensorsFile(os.path.join(WORK, "oneshot", "calib", "activations.safetensors"))
    block0 = SafetensorsFile(os.path.join(WORK, "seq", "block0", "calib", "activations.safetensors"))
    block1 = SafetensorsFile(os.path.join(WORK, "seq", "block1", "calib", "activations.safetensors"))
    check(sorted(block0.tensors) == sorted(f"{n}.input" for n in LAYERS[:7]), f"block 0 {sorted(block0.tensors)}")
    check(sorted(block1.tensors) == sorted(f"{n}.input" for n in LAYERS[7:]), f"block 1 {sorted(block1.tensors)}")
    for n in LAYERS[:7]:
        check(np.array_equal(block0.array(n + ".input"), oneshot.array(n + ".input")),
              f"{n}: block 0 did not record the dense model's inputs")
    model = load_checkpoint(REF)
    replace_linear_weights(model, read_blr_model(os.path.join(WORK, "seq", "block0", "blr.safetensors")))
    want = recorded_inputs(model, LAYERS[7:])
    for n in LAYERS[7:]:
        got = block1.array(n + ".input")
        check(np.array_equal(got, want[n]), f"{n}: block 1's inputs are not those of the model with block 0 blr")
        check(not np.array_equal(got, oneshot.array(n + ".input")), f"{n}: block 1 recorded the dense model's inputs")
    weights1 = SafetensorsFile(os.path.join(WORK, "seq", "block1", "calib", "weights.safetensors"))
    dense = load_checkpoint(REF).state_dict()
    for n in LAYERS[7:]:
        check(np.array_equal(weights1.array(n + ".weight"), dense[n + ".weight"].numpy()),
              f"{n}: block 1 fitted a weight other than the dense model's")
    report = load_json("seq/report.json")
    check(report["mode"] == "sequential" and [r["block"] for r in report["runs"]] == [0, 1], "seq report runs")
    tool("evaluate.py", "--model", REF, "--corpus", CORPUS, "--documents", "3", "--blr",
         "seq/block0/blr.safetensors", "--blr", "seq/block1/blr.safetensors", "--json", "seq-eval.json")
    check(load_json("seq-eval.json")["blr"]["loss_nats"] == report["evaluation"]["blr"]["loss_nats"],
          "the sequential report's evaluation is not evaluate.py's on its two model files")


def test_a_transformers_5_config_is_read():
    # transformers 5 saves rope_theta inside rope_parameters (with rope_type) and dtype for torch_dtype
    config = load_json("ref/config.json")
    t5 = os.path.join(WORK, "t5")
    os.makedirs(t5, exist_ok=True)

    def read_with(**changes):
        with open(os.path.join(t5, "config.json"), "w") as f:
            json.dump({k: v for k, v in {**config, **changes}.items() if v is not None}, f)
        return read_config(t5)
    nested = {"rope_theta": config["rope_theta"], "rope_type": "default"}
    check(read_with(rope_theta=None, torch_dtype=None, dtype="float32", rope_parameters=nested) == read_config(REF),
          "the transformers 5 form reads as the transformers 4 form")
    raises(lambda: read_with(rope_parameters={"rope_theta": 5e5, "rope_type": "default"}), "disagree", ConfigError)
    raises(lambda: read_with(rope_theta=None, rope_parameters={"rope_theta": 5e5, "rope_type": "llama3", "factor": 8.0}),
           "this model has plain rotary positions", ConfigError)


def test_bad_inputs_are_refused():
    bad = os.path.join(WORK, "bad")
    shutil.copytree(REF, bad, dirs_exist_ok=True)
    config = load_json("ref/config.json")
    with open(os.path.join(bad, "config.json"), "w") as f:
        json.dump({**config, "intermediate_size": 96}, f)
    p = tool("evaluate.py", "--model", bad, "--corpus", CORPUS, expect_rc=1)
    check("model.safetensors: tensor model.layers.0.mlp.gate_proj.weight F32 [128, 64], want" in p.stderr, p.stderr)
    with open(os.path.join(bad, "config.json"), "w") as f:
        json.dump({**config, "num_key_value_heads": 3}, f)
    p = tool("evaluate.py", "--model", bad, "--corpus", CORPUS, expect_rc=1)
    check("config.json: num_attention_heads 2 is not a multiple of num_key_value_heads 3" in p.stderr, p.stderr)
    p = tool("evaluate.py", "--model", REF, "--corpus", CORPUS, "--blr", "oneshot/blr.safetensors", "--blr",
             "oneshot/blr.safetensors", expect_rc=1)
    check("is in an earlier --blr file too" in p.stderr, p.stderr)
    p = tool("layerwise.py", "--model", REF, "--corpus", CORPUS, "--fit", args.fit, "--out", "none", expect_rc=1)
    check("give --bpw, --model-bpw, or --set rank=R" in p.stderr, p.stderr)


setup()
main({name: f for name, f in globals().items() if name.startswith("test_")})
