"""The engine's dense Llama forward (vkblr/model/llama_forward.hpp, run by
tests/model/llama_forward.cpp) against the reference model's PyTorch code
(tools/model/llama.py, in float64) on a checkpoint that code wrote.

    python3 pytools_model_forward.py --work DIR --fit VKBLR_FIT --read-back READ_BACK \
        --tool llama-forward=VKBLR_LLAMA_FORWARD

Checks: the final hidden states of 2 sequences of 40 tokens through a toy
model (hidden 64, 2 query heads of 32 over 1 KV head, MLP 128, 2 blocks,
random norms) agree with PyTorch's within the engine's f16 staging (the
weights and the GEMM inputs rounded to f16); the comparison discriminates:
PyTorch with the positions running on across the sequences instead of
restarting, or with another rotary base, is far outside the bound; token
ids past the vocabulary and a count that does not match the batch are
refused with the file named; the engine's held-out measure
(vkblr/model/held_out.hpp) scores the same windows and tokens as
tools/model/evaluate.py, its loss within the f16 staging of the head, the
same numbers run after run; with a vkblr-fit model file's layers in place
of the projections (vkblr-fit run on the toy's own calibration), its loss
is evaluate.py's of the model with their Ŵ swapped in.
"""
import os
import sys

from pytools_support import REPO, check, main, options, require_modules, run

require_modules("numpy", "torch")
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tools", "model"))
sys.path.insert(0, os.path.join(REPO, "tools", "vkblr-fit", "python"))
from checkpoint import save_checkpoint  # noqa: E402
from llama import LlamaConfig, LlamaForCausalLM  # noqa: E402
from safetensors_file import SafetensorsFile  # noqa: E402

args = options()
FORWARD = args.tool["llama-forward"]
WORK = args.work
SEQUENCES, SEQ = 2, 40

config = LlamaConfig(vocab_size=272, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64, rope_theta=500.0)
model = LlamaForCausalLM(config)
model.initialize(5)
with torch.no_grad():
    generator = torch.Generator().manual_seed(6)
    for name, p in model.named_parameters():
        if p.dim() == 1:  # the norms: not all ones, so that a weight applied wrongly shows
            p.copy_(1 + 0.3 * (2 * torch.rand(p.shape, generator=generator) - 1))
        elif "proj" in name:  # larger than the init's 0.02, so that every layer changes the stream
            p.mul_(8.0)
CHECKPOINT = os.path.join(WORK, "toy")
save_checkpoint(model, CHECKPOINT)
ids = np.random.default_rng(7).integers(0, 256, size=SEQUENCES * SEQ).astype("<u2")
IDS = os.path.join(WORK, "ids.npy")
np.save(IDS, ids)


def torch_hidden(positions_restart=True, theta=None):
    m = LlamaForCausalLM(LlamaConfig(**{**config.__dict__, **({"rope_theta": theta} if theta else {})}))
    m.load_state_dict(model.state_dict())
    m = m.double()
    with torch.no_grad():
        x = torch.from_numpy(ids.astype(np.int64))
        if positions_restart:
            return m.model(x.view(SEQUENCES, SEQ)).reshape(SEQUENCES * SEQ, -1).numpy()
        # one sequence of all the tokens: positions run on, attention crosses the sequences' border
        return m.model(x.view(1, -1)).reshape(SEQUENCES * SEQ, -1).numpy()


def engine_hidden(name="out.safetensors", ids_path=IDS, sequences=SEQUENCES, seq=SEQ, expect_rc=0):
    out = os.path.join(WORK, name)
    p = run([FORWARD, CHECKPOINT, ids_path, sequences, seq, out], expect_rc=expect_rc)
    return (SafetensorsFile(out).array("hidden") if expect_rc == 0 else None), p


def test_the_forward_matches_pytorch():
    got, _ = engine_hidden()
    want = torch_hidden()
    check(got.shape == want.shape, f"shape {got.shape}, want {want.shape}")
    error = np.abs(got.astype(np.float64) - want)
    # the rows are normalized (|values| ~ the norm's weight, about 1); f16
    # weights and f16 GEMM inputs give ~1e-3 per value
    worst, mean = float(error.max()), float(error.mean())
    print(f"      engine against PyTorch float64: worst {worst:.2e}, mean {mean:.2e}")
    check(worst < 3e-2 and mean < 3e-3, f"worst {worst}, mean {mean}")
    for label, other in (("positions running on", torch_hidden(positions_restart=False)),
                         ("rotary base 10000", torch_hidden(theta=10000.0))):
        wrong = float(np.abs(got.astype(np.float64) - other).mean())
        check(wrong > 10 * mean, f"{label}: mean difference {wrong} is not far above {mean}: the test cannot see it")


def test_the_held_out_measure_matches_evaluate_py():
    import json
    from evaluate import evaluate_tokens, window_plan
    # a stream of 3 documents' worth: windows of 32 tokens, stride 12, batches of 3 (the last one short)
    stream = np.random.default_rng(8).integers(0, 257, size=150).astype("<u2")
    path = os.path.join(WORK, "stream.npy")
    np.save(path, stream)
    p = run([FORWARD, "--held-out", CHECKPOINT, path, 32, 12, 3])
    got = json.loads(p.stdout)
    m = LlamaForCausalLM(config)
    m.load_state_dict(model.state_dict())
    want = evaluate_tokens(m, stream, 150, context=32, stride=12, batch=3)
    check(got["tokens_scored"] == want["tokens_scored"] == 149, f"scored {got['tokens_scored']}, {want['tokens_scored']}")
    check(got["windows"] == want["windows"] == len(window_plan(150, 32, 12)), f"windows {got['windows']}")
    # the engine stages the hidden states and the head to f16: the summed loss within 0.5 %
    relative = abs(got["loss_nats"] - want["loss_nats"]) / want["loss_nats"]
    print(f"      held-out loss: engine {got['loss_nats']:.4f}, PyTorch {want['loss_nats']:.4f} nats ({relative:.1e})")
    check(relative < 5e-3, f"loss {got['loss_nats']} against {want['loss_nats']}")
    again = json.loads(run([FORWARD, "--held-out", CHECKPOINT, path, 32, 12, 3]).stdout)
    check(again == got, f"a second run differs: {again} against {got}")


def test_a_compressed_model_matches_evaluate_py():
    # every projection of the toy fitted by vkblr-fit (rank 32, 2 paths, 30 steps) on the toy's own
    # inputs, then the engine's held-out measure of the model with the blr layers in, against
    # evaluate.py's of the model with their Ŵ swapped in (load_blr.py)
    import json
    from dump_calibration import dump_calibration
    from evaluate import evaluate_tokens, with_blr
    from layerwise import run_fit
    from load_blr import read_blr
    windows = torch.from_numpy(np.random.default_rng(9).integers(0, 257, size=(12, 48)).astype(np.int64))
    calib = os.path.join(WORK, "calib")
    dump_calibration(model, [windows[:6], windows[6:]], calib, layers="model.layers.*_proj", batch=64,
                     max_tokens=9 * 64, settings={"rank": 32, "steps": 30}, seed=1, say=lambda *_: None)
    prefix = os.path.join(WORK, "blr")
    fit = run_fit(args.fit, os.path.join(calib, "job.json"), prefix, None, os.path.join(WORK, "fit.log"))
    stream = np.random.default_rng(10).integers(0, 257, size=150).astype("<u2")
    path = os.path.join(WORK, "stream_blr.npy")
    np.save(path, stream)
    got = json.loads(run([FORWARD, "--held-out", CHECKPOINT, path, 32, 12, 3, "--blr", fit["model_file"]]).stdout)
    m = LlamaForCausalLM(config)
    m.load_state_dict(model.state_dict())
    dense = evaluate_tokens(m, stream, 150, context=32, stride=12, batch=3)
    want = evaluate_tokens(with_blr(m, read_blr(fit["model_file"])), stream, 150, context=32, stride=12, batch=3)
    relative = abs(got["loss_nats"] - want["loss_nats"]) / want["loss_nats"]
    print(f"      compressed model's held-out loss: engine {got['loss_nats']:.4f}, PyTorch {want['loss_nats']:.4f} "
          f"nats ({relative:.1e}); dense {dense['loss_nats']:.4f}")
    check(got["tokens_scored"] == want["tokens_scored"], f"scored {got['tokens_scored']}")
    check(relative < 5e-3, f"loss {got['loss_nats']} against {want['loss_nats']}")
    # the measure sees the compression: the blr model's loss is not the dense one's
    check(abs(want["loss_nats"] - dense["loss_nats"]) > 20 * abs(got["loss_nats"] - want["loss_nats"]),
          f"dense {dense['loss_nats']}, blr {want['loss_nats']}: too close to tell the models apart")


def test_bad_inputs_are_refused():
    bad = os.path.join(WORK, "bad_ids.npy")
    np.save(bad, np.full(SEQUENCES * SEQ, 300, dtype="<u2"))
    _, p = engine_hidden("bad.safetensors", bad, expect_rc=1)
    check("token 0 is 300, outside the vocabulary of 272" in p.stderr, p.stderr)
    _, p = engine_hidden("short.safetensors", IDS, SEQUENCES, SEQ + 1, expect_rc=1)
    check("80 token ids, want SEQUENCES × SEQ = 82" in p.stderr, p.stderr)


main({name: f for name, f in globals().items() if name.startswith("test_")})
