#!/usr/bin/env bash
# The reference-model figures (docs/models.md), on one H100/H200 of the
# `device` tool, a stage or a few per call (a call has 10 minutes; the work
# directory .model-work/ stays on the machine between calls while it is
# warm, so the stages of one session build on each other):
#   train      train the reference model (tools/model/train_reference.py,
#              ~5 min), its held-out figures, and hf_check.py (transformers
#              loads it: the same logits, the same token ids; HF_CHECK=0
#              skips it)
#   bpw1 bpw1.5 bpw2
#              layer-wise, uniform 1 / 1.5 / 2 bpw per layer: dump the
#              calibration inputs (36864 training tokens), vkblr-fit
#              --manifest with its GPU defaults, evaluate (layerwise.py)
#   model-bpw1 the same with --model-bpw 1 (the budget over all 56 layers)
#   seq1       sequential calibration at 1 bpw (block by block)
#   peer peer4x
#              the whole-model peer (tools/lab/qat_peer.py) at 1 bpw on the
#              calibration tokens and on 4x them: learning rates PEER_LRS
#              (default 3e-4,1e-3,3e-3; best kept), torch.compile
#              PEER_COMPILE (default reduce-overhead: CUDA graphs; none
#              saves a short call the compile's minutes when only the
#              perplexity is read), a flip check (eager against compiled),
#              and a failure if a timed run flips no sign
#   peer-fit peer-fit4x
#              the peer on the calibration tokens (4x them), started from
#              bpw1's vkblr-fit model file (--from-blr) instead of Dual-SVID
#   peer-fit-dense
#              peer-fit with the blr layers through Ŵ formed each step
#              (--weight-form dense: the same function, the form a user
#              picks for speed at many tokens per step)
#   speed      tokens/s alone, without the reference model's training: a
#              randomly initialised model of its shapes (llama.py, seed 1),
#              vkblr-train from Dual-SVID and the peer (factored and
#              --weight-form dense; SPEED_FORMS=dense for that form alone)
#              for 300 steps of the same 8 windows of 1024 (tokens stage),
#              one learning rate each
#   tokens     the token files of vkblr-train (tools/model/export_tokens.py):
#              the held-out stream and the very windows the peer trains on,
#              1x and 4x the calibration tokens
#   vt-fit vt-fit4x vt-ds vt-ds4x
#              vkblr-train, the peer's recipe (600 steps of 8 windows, warm-up
#              30, cosine, τ = 1), from bpw1's model file (fit) or its own
#              Dual-SVID init at 1 bpw (ds), on the 1x or 4x windows, one run
#              per learning rate of VT_LRS (default 1e-3,3e-3; best kept) and
#              per latent rms of VT_RMS (a comma list; default vkblr-train's
#              --latent-rms): held-out figures every 150 steps, tokens/s, memory
#              ORDER_SEEDS (a comma list, e.g. 1,2,3): the peer and vkblr-train
#              stages run once per seed of the windows' order (the same
#              windows): the spread of their results; EVAL_EVERY replaces
#              the 150 steps between held-out figures of both
#   qwen       a random Qwen2.5-0.5B-shaped Llama (24 blocks, hidden 896,
#              vocabulary 151936, tied) distilled by vkblr-train from its
#              Dual-SVID init at 1 bpw for QWEN_STEPS steps of one window of
#              4096 (memory and tokens/s at size)
#   table      the compact table of all the stages done, and
#              $OUT/model-checks.json (FROM=DIR: from the JSON files the
#              calls brought back, gathered in DIR, on any machine)
# Each stage writes its report under .model-work/ and copies it to $OUT
# (at most 8 files come back from a call: a stage writes one or two); a
# layer-wise stage cut off by the call's limit continues where it stopped
# when run again (vkblr-fit --resume). Whole-model bits per weight count
# every parameter: the blr layers as stored, the embeddings, norms and head
# at 16 bits (tools/model/model_bits.py); the dense model is 16 bits per
# weight by the same count.
#
# Here, before the calls (the device preset's vkblr-fit, the Vulkan loader
# of the dev root, the corpus packed):
#   tools/dev/devenv.sh run -- sh -c 'cmake --preset device && cmake --build --preset device -j2 --target vkblr-fit'
#   tools/dev/device-kit.sh
#   tools/dev/devenv.sh run -- python3 tools/model/make_corpus.py --out .corpus
#   mkdir -p .gpu && strip -o .gpu/vkblr-fit build/device/tools/vkblr-fit && gzip -f .gpu/vkblr-fit
#   tar -czf .gpu/corpus.tgz .corpus
# and carry [".gpu", ".devkit/lib", ".devkit/debs"] (corpus.tgz is 7.7 MB,
# .devkit/lib and debs under 1 MB). Then, one call each (none of these
# stages' times has been measured yet: split a call that risks its limit):
#   tools/lab/model-checks.sh train
#   tools/lab/model-checks.sh bpw1 bpw1.5
#   tools/lab/model-checks.sh bpw2 model-bpw1
#   tools/lab/model-checks.sh seq1
#   tools/lab/model-checks.sh peer peer-fit
#   tools/lab/model-checks.sh peer4x table
# (stages left out run when named later; `table` may run any time).
# SKIP_DONE=1 skips a stage whose report is already in the work directory
# (a call that repeats the list of an earlier one goes on where it stopped).
#
# --toy: the same stages at toy size on this machine's CPU, the corpus a
# stand-in package (tests/fit/model_fixture.py), vkblr-fit the release
# build on lavapipe (FIT=... to name another): a dry run of this script.
# At toy size no layer can take 1-2 bpw (rank 32 of a 64-wide layer is
# ~3 bpw), so the bpw stages fit rank 32 and --model-bpw is 4.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
TOY=0
if [ "${1:-}" = "--toy" ]; then TOY=1; shift; fi
W=${WORK:-.model-work}
OUT=${OUT:-/tmp/out}
mkdir -p "$W" "$OUT"
log() { echo "== $* ($(date +%T))"; }
stages=${*:-train bpw1 bpw1.5 bpw2 model-bpw1 seq1 peer peer-fit peer4x table}

if [ "$stages" = table ]; then
  :  # the table alone needs no set-up (FROM=DIR: on any machine with Python)
elif [ $TOY = 1 ]; then
  FIT=${FIT:-build/release/tools/vkblr-fit}
  CORPUS=$W/corpus
  if [ ! -f "$CORPUS/corpus.json" ]; then
    python3 -c "import sys; sys.path.insert(0, 'tests/fit'); import model_fixture as m; print(m.make_fake_deb('$W'))" \
      && python3 tools/model/make_corpus.py --deb "$W/fake-doc_1.0_all.deb" --out "$CORPUS" --min-total-bytes 1000 \
        --held-out-bytes 20000 || exit 1
  fi
  TRAIN=(--preset toy --steps 30)
  LW=(--batch 64 --set steps=20 --eval-batch 8)
  declare -A SIZE=([bpw1]="--set rank=32" [bpw1.5]="--set rank=32" [bpw2]="--set rank=32" [model-bpw1]="--model-bpw 4"
                   [seq1]="--set rank=32")
  PEER=(--rank 32 --steps 20 --eval-every 10 --lr "1e-3,1e-2" --compile none --device cpu
        --flip-check 3 --require-flips)
  VT=${VT:-build/release/tools/vkblr-train}
  VT_RUN=(--steps 20 --batch 4 --warmup 3 --eval-every 10)
  VT_SIZE=(--rank 32)
  SPEED=(--steps 20 --batch 4 --warmup 3 --eval-every 20)
  SPEED_PEER=(--compile none --device cpu)
  PRESET=toy
  CONTEXT=64
  DEVICE=cpu
else
  [ -f .devkit/lib/libvulkan.so.1 ] || { echo "model-checks: .devkit/lib is missing (tools/dev/device-kit.sh, carry it)"; exit 1; }
  source tools/dev/device-env.sh
  [ -e .gpu/vkblr-fit ] || gunzip -k .gpu/vkblr-fit.gz || exit 1
  chmod +x .gpu/vkblr-fit
  FIT=.gpu/vkblr-fit
  export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc
  [ -f .corpus/corpus.json ] || tar -xzf .gpu/corpus.tgz || exit 1
  CORPUS=.corpus
  TRAIN=(--preset reference --max-seconds 285)
  LW=(--batch 4096 --device cuda --eval-batch 16)
  declare -A SIZE=([bpw1]="--bpw 1" [bpw1.5]="--bpw 1.5" [bpw2]="--bpw 2" [model-bpw1]="--model-bpw 1" [seq1]="--bpw 1")
  PEER=(--bpw 1 --steps 600 --batch 8 --eval-every 150 --lr "${PEER_LRS:-3e-4,1e-3,3e-3}" --compile "${PEER_COMPILE:-reduce-overhead}"
        --device cuda --flip-check 5 --require-flips)
  [ -e .gpu/vkblr-train ] || gunzip -k .gpu/vkblr-train.gz || exit 1
  chmod +x .gpu/vkblr-train
  VT=.gpu/vkblr-train
  VT_RUN=(--steps 600 --batch 8 --warmup 30 --eval-every 150)
  VT_SIZE=(--bpw 1)
  SPEED=(--steps 300 --batch 8 --warmup 30 --eval-every 300)
  SPEED_PEER=(--compile reduce-overhead --device cuda)
  PRESET=reference
  CONTEXT=1024
  DEVICE=cuda
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fi
if [ -n "${EVAL_EVERY:-}" ]; then
  for i in "${!PEER[@]}"; do [ "${PEER[$i]}" = --eval-every ] && PEER[$((i + 1))]=$EVAL_EVERY; done
  for i in "${!VT_RUN[@]}"; do [ "${VT_RUN[$i]}" = --eval-every ] && VT_RUN[$((i + 1))]=$EVAL_EVERY; done
fi
REF=$W/reference
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 1))"; }

report_of() {  # the work directory's report of a stage
  case $1 in
    train) echo "$REF/report.json" ;;
    peer | peer4x | peer-fit | peer-fit4x | peer-fit-dense | vt-* | qwen | speed) echo "$W/$1.json" ;;
    tokens) echo "$W/tokens4x/tokens.json" ;;
    *) echo "$W/$1/report.json" ;;
  esac
}

for stage in $stages; do
  t0=$(now)
  if [ "${SKIP_DONE:-0}" = 1 ] && [ "$stage" != table ] && [ -f "$(report_of "$stage")" ]; then
    log "$stage: done already"
    continue
  fi
  case $stage in
    train)
      log "train the reference model"
      python3 tools/model/train_reference.py --corpus "$CORPUS" --out "$REF" "${TRAIN[@]}" 2>&1 | tee "$W/train.log" | tail -6
      cp "$REF/report.json" "$OUT/train.json" 2>/dev/null
      if [ "${HF_CHECK:-1}" != 0 ]; then
        python3 tools/model/hf_check.py --model "$REF" --corpus "$CORPUS" --device $DEVICE --json "$W/hf_check.json"
        echo "hf_check rc $?"; cp "$W/hf_check.json" "$OUT/" 2>/dev/null
      fi
      ;;
    bpw1 | bpw1.5 | bpw2 | model-bpw1 | seq1)
      log "layer-wise $stage"
      extra=""; [ "$stage" = seq1 ] && extra=--sequential
      # shellcheck disable=SC2086
      python3 tools/model/layerwise.py --model "$REF" --corpus "$CORPUS" --fit "$FIT" --out "$W/$stage" ${SIZE[$stage]} \
        $extra "${LW[@]}" --no-dense-eval --resume 2>&1 | grep -v "tokens seen" | tee "$W/$stage.log" | tail -4
      cp "$W/$stage/report.json" "$OUT/$stage.json" 2>/dev/null
      ;;
    peer | peer4x | peer-fit | peer-fit4x | peer-fit-dense)
      log "the whole-model peer: $stage"
      tokens=36864; [[ $stage == *4x ]] && tokens=147456
      [ $TOY = 1 ] && { tokens=576; [[ $stage == *4x ]] && tokens=2304; }
      args=("${PEER[@]}")
      [[ $stage == *-dense ]] && args+=(--weight-form dense)
      [ -n "${ORDER_SEEDS:-}" ] && args+=(--order-seeds "$ORDER_SEEDS")
      if [[ $stage == peer-fit* ]]; then
        # bpw1's model file in place of the size (--bpw / --rank): the peer starts from vkblr-fit's layers
        start=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['files'][0])" "$W/bpw1/report.json") \
          || { echo "model-checks: peer-fit needs the bpw1 stage first"; exit 1; }
        for i in "${!args[@]}"; do
          case ${args[$i]} in --bpw | --rank) args[$i]=--from-blr; args[$((i + 1))]=$start ;; esac
        done
      fi
      python3 tools/lab/qat_peer.py --model "$REF" --corpus "$CORPUS" --out "$W/$stage.json" --train-tokens $tokens \
        "${args[@]}" 2>&1 | tee "$W/$stage.log" | grep -v "^  lr" | tail -8
      cp "$W/$stage.json" "$OUT/" 2>/dev/null
      ;;
    tokens)
      log "token files for vkblr-train"
      for x in 1 4; do
        t=$((36864 * x)); [ $TOY = 1 ] && t=$((576 * x))
        d=$W/tokens; [ $x = 4 ] && d=$W/tokens4x
        python3 tools/model/export_tokens.py --corpus "$CORPUS" --out "$d" --train-windows $t --context $CONTEXT \
          --seed 1 || exit 1
      done
      ;;
    vt-fit | vt-fit4x | vt-ds | vt-ds4x)
      log "vkblr-train: $stage"
      d=$W/tokens; [[ $stage == *4x ]] && d=$W/tokens4x
      [ -f "$d/tokens.json" ] || { echo "model-checks: $stage needs the tokens stage first"; exit 1; }
      if [[ $stage == vt-fit* ]]; then
        start=(--blr "$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['files'][0])" \
          "$W/bpw1/report.json")") || { echo "model-checks: $stage needs the bpw1 stage first"; exit 1; }
      else
        start=(--init dual-svid "${VT_SIZE[@]}" --paths 2)
      fi
      IFS=, read -ra lrs <<< "${VT_LRS:-1e-3,3e-3}"
      rmss=(""); [ -n "${VT_RMS:-}" ] && IFS=, read -ra rmss <<< "$VT_RMS"
      seeds=(""); [ -n "${ORDER_SEEDS:-}" ] && IFS=, read -ra seeds <<< "$ORDER_SEEDS"
      for lr in "${lrs[@]}"; do
        for rms in "${rmss[@]}"; do
          for seed in "${seeds[@]}"; do
            run=lr$lr; extra=()
            [ -n "$rms" ] && { run=$run-rms$rms; extra+=(--latent-rms "$rms"); }
            [ -n "$seed" ] && { run=$run-seed$seed; extra+=(--seed "$seed"); }
            "$VT" --model "$REF" "${start[@]}" "${extra[@]}" --train "$d/train_windows.npy" \
              --held-out "$d/heldout.npy" "${VT_RUN[@]}" --lr "$lr" --out "$W/$stage/$run" --quiet \
              > "$W/$stage.$run.log" 2>&1
            echo "$run rc $?"; tail -3 "$W/$stage.$run.log"
          done
        done
      done
      python3 - "$W/$stage" "$W/$stage.json" <<'PY'
import glob, json, os, sys
runs = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "lr*", "report.json"))):
    with open(path) as f:
        r = json.load(f)
    runs.append({"lr": r["settings"]["lr"], "latent_rms": r["settings"].get("latent_rms"),
                 "seed": r["settings"].get("seed"), "final": r["curve"][-1], "report": r})
if runs:
    best = min(runs, key=lambda x: x["final"]["bits_per_byte"])
    out = {"best_lr": best["lr"], "best_latent_rms": best["latent_rms"], "best": best["final"],
           "runs": [{"lr": x["lr"], "latent_rms": x["latent_rms"], "seed": x["seed"], "final": x["final"]}
                    for x in runs],
           "best_report": best["report"]}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
    for x in runs:
        rms = "" if x["latent_rms"] is None else f", latent rms {x['latent_rms']:g}"
        rms += "" if x["seed"] is None else f", seed {x['seed']}"
        print(f"  lr {x['lr']:g}{rms}: {x['final']['bits_per_byte']:.4f} bits per byte, ppl {x['final']['perplexity']:.4f}")
PY
      cp "$W/$stage.json" "$OUT/" 2>/dev/null
      ;;
    speed)
      log "tokens/s of vkblr-train and the peer on a random model of the reference shapes"
      [ -f "$W/tokens/tokens.json" ] || { echo "model-checks: speed needs the tokens stage first"; exit 1; }
      rnd=$W/random-ref
      python3 - "$rnd" $PRESET <<'PY' || exit 1
import sys
sys.path.insert(0, "tools/model")
from checkpoint import save_checkpoint
from llama import LlamaConfig, LlamaForCausalLM
model = LlamaForCausalLM(LlamaConfig.preset(sys.argv[2]))
model.initialize(1)
save_checkpoint(model, sys.argv[1])
PY
      steps=("${SPEED[@]}")
      "$VT" --model "$rnd" --init dual-svid "${VT_SIZE[@]}" --paths 2 --train "$W/tokens/train_windows.npy" \
        --held-out "$W/tokens/heldout.npy" "${steps[@]}" --lr 3e-3 --out "$W/speed-vt" --quiet > "$W/speed-vt.log" 2>&1
      echo "vkblr-train rc $?"; tail -2 "$W/speed-vt.log"
      for form in ${SPEED_FORMS:-factored dense}; do
        python3 tools/lab/qat_peer.py --model "$rnd" --corpus "$CORPUS" --out "$W/speed-peer-$form.json" \
          --train-tokens $((36 * CONTEXT)) "${VT_SIZE[@]}" "${steps[@]}" --lr 1e-3 "${SPEED_PEER[@]}" \
          --flip-check 5 --require-flips --weight-form $form 2>&1 | grep -v "^  lr" | tail -3
      done
      python3 - "$W" "$W/speed.json" <<'PY'
import json, os, sys
w = sys.argv[1]
def load(p):
    try:
        with open(os.path.join(w, p)) as f:
            return json.load(f)
    except OSError:
        return None
out = {}
vt = load("speed-vt/report.json")
if vt:
    out["vkblr-train"] = {"tokens_per_s": vt.get("tokens_per_s"), "train_s": vt.get("train_s"), "memory": vt.get("memory")}
for form in ("factored", "dense"):
    r = load(f"speed-peer-{form}.json")
    if r:
        run = r["runs"][0]
        out[f"peer-{form}"] = {"tokens_per_s": run["final"]["tokens"] / run["train_s"], "train_s": run["train_s"],
                               "flips": run["flips"], "compile_s": r.get("compile_s")}
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1)
for k, v in out.items():
    print(f"  {k:18} {v['tokens_per_s'] / 1e6:.3f} M tokens/s ({v['train_s']:.1f} s)")
PY
      cp "$W/speed.json" "$OUT/" 2>/dev/null
      ;;
    qwen)
      log "a Qwen-0.5B-shaped model, distilled at size"
      q=$W/qwen; mkdir -p "$q"
      python3 - "$q/model" <<'PY' || exit 1
import os, sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
config = LlamaConfig(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                     num_attention_heads=14, num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
                     rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True, torch_dtype="float32")
torch.manual_seed(1)
model = LlamaForCausalLM(config)
model.save_pretrained(sys.argv[1], safe_serialization=True)
print("qwen-shaped checkpoint:", sum(p.numel() for p in model.parameters()) / 1e6, "M parameters")
PY
      # the held-out measure on the first 65536 held-out tokens (its bits per byte count them as bytes: the
      # model is random, its perplexity against its teacher's is what is read)
      python3 -c "import numpy as np, sys; np.save(sys.argv[2], np.load(sys.argv[1])[:65536])" \
        "$W/tokens/heldout.npy" "$q/heldout.npy" || exit 1
      "$VT" --model "$q/model" --init dual-svid --bpw 1 --paths 2 --train "$W/tokens/train.npy" --windows 64 \
        --context 4096 --held-out "$q/heldout.npy" --held-out-bytes 65536 --steps "${QWEN_STEPS:-300}" --batch 1 \
        --warmup 20 --lr 1e-3 --eval-every "${QWEN_STEPS:-300}" --teacher live --memory "${QWEN_MEMORY:-keep}" \
        --out "$q/run" --quiet > "$W/qwen.log" 2>&1
      echo "rc $?"; tail -5 "$W/qwen.log"
      cp "$q/run/report.json" "$W/qwen.json" && cp "$W/qwen.json" "$OUT/" 2>/dev/null
      ;;
    table)
      log table
      python3 - "$W" "$OUT/model-checks.json" "${FROM:-}" <<'PY' | tee "$OUT/model-checks.txt"
import json, os, sys
w, out, copies = sys.argv[1], sys.argv[2], sys.argv[3]
def load(path):
    """A stage's report in the work directory, or (FROM=DIR) its copy as a call's $OUT named it."""
    alias = {"reference/report.json": "train.json"}.get(path, path.replace("/report.json", ".json"))
    for where in ([os.path.join(copies, alias)] if copies else []) + [os.path.join(w, path)]:
        try:
            with open(where) as f:
                return json.load(f)
        except OSError:
            pass
    return None
rows, summary = [], {}
train = load("reference/report.json")
if train:
    h = train["heldout"]
    summary["reference"] = {"parameters": train["parameters"], "training_tokens": train["training_tokens"],
                            "loop_wall_s": train["loop_wall_s"], "stopped_early": train["stopped_early"],
                            "perplexity": h["perplexity"], "bits_per_byte": h["bits_per_byte"],
                            "tokens_scored": h["tokens_scored"], "bytes": h["bytes"], "device": train["device"]}
    rows.append(("dense reference", 16.0, None, h["perplexity"], h["bits_per_byte"], train["loop_wall_s"],
                 f"{train['training_tokens'] / 1e6:.1f} M training tokens"))
for stage, label in (("bpw1", "layer-wise 1 bpw"), ("bpw1.5", "layer-wise 1.5 bpw"), ("bpw2", "layer-wise 2 bpw"),
                     ("model-bpw1", "layer-wise --model-bpw 1"), ("seq1", "sequential 1 bpw")):
    r = load(f"{stage}/report.json")
    if r:
        e, b = r["evaluation"]["blr"], r["model_bits"]
        fit_s = sum(run["totals"].get("fit_wall_s", 0) for run in r["runs"])
        summary[stage] = {"bpw_model": b["bpw"], "bpw_blr": b["blr"]["bpw"], "perplexity": e["perplexity"],
                          "bits_per_byte": e["bits_per_byte"], "fit_wall_s": fit_s, "wall_s": r["wall_s"],
                          "weighted_output_error": [run["totals"].get("weighted_output_error") for run in r["runs"]]}
        rows.append((label, b["bpw"], b["blr"]["bpw"], e["perplexity"], e["bits_per_byte"], fit_s,
                     f"{r['calibration']['tokens']} calibration tokens"))
for stage, label in (("peer", "peer, calibration tokens"), ("peer4x", "peer, 4x calibration tokens"),
                     ("peer-fit", "peer from vkblr-fit, cal. tokens"), ("peer-fit4x", "peer from vkblr-fit, 4x"),
                     ("peer-fit-dense", "peer from vkblr-fit, Ŵ formed")):
    r = load(f"{stage}.json")
    if r:
        best, b = r["best"], r["model_bits"]
        summary[stage] = {"bpw_model": b["bpw"], "bpw_blr": b["blr"]["bpw"], "best": best,
                          "train_tokens": r["settings"]["train_tokens"], "compile_s": r.get("compile_s"),
                          "lrs": {str(x["lr"]): x["final"]["bits_per_byte"] for x in r["runs"]},
                          "flip_check": {k: sum(v) for k, v in r.get("flip_check", {}).items() if k != "steps"}}
        rows.append((label, b["bpw"], b["blr"]["bpw"], best["perplexity"], best["bits_per_byte"], best["train_s"],
                     f"lr {best['lr']:g}, {best['tokens'] / 1e6:.2f} M tokens seen, {best['flips']} flips"))
for stage, label in (("vt-fit", "vkblr-train from vkblr-fit"), ("vt-fit4x", "vkblr-train from vkblr-fit, 4x"),
                     ("vt-ds", "vkblr-train from Dual-SVID"), ("vt-ds4x", "vkblr-train from Dual-SVID, 4x")):
    r = load(f"{stage}.json")
    if r:
        best, rep = r["best"], r["best_report"]
        b = rep.get("bits", {})
        summary[stage] = {"best_lr": r["best_lr"], "best": best, "lrs": {str(x["lr"]): x["final"]["bits_per_byte"]
                                                                         for x in r["runs"]},
                          "tokens_per_s": rep.get("tokens_per_s"), "memory": rep.get("memory")}
        rms = "" if r.get("best_latent_rms") is None else f" rms {r['best_latent_rms']:g}"
        rows.append((label, b.get("bpw", 0.0), b.get("blr", {}).get("bpw"), best["perplexity"], best["bits_per_byte"],
                     best.get("train_s", 0.0), f"lr {r['best_lr']:g}{rms}, {best['tokens'] / 1e6:.2f} M tokens seen, "
                     f"{(rep.get('tokens_per_s') or 0) / 1e6:.3f} M tok/s"
                     + (f", {rep['steps']['skipped']} of {rep['steps']['run']} steps skipped"
                        if rep.get("steps", {}).get("skipped") else "")))
print(f"{'model':33} {'bpw':>7} {'blr bpw':>8} {'ppl':>9} {'bits/byte':>9} {'wall s':>8}  note")
for label, bpw, blr, ppl, bpb, wall, note in rows:
    blr_text = "-" if blr is None else f"{blr:.3f}"
    print(f"{label:33} {bpw:7.3f} {blr_text:>8} {ppl:9.4f} {bpb:9.4f} {wall:8.1f}  {note}")
with open(out, "w") as f:
    json.dump(summary, f, indent=1)
PY
      ;;
    *) echo "model-checks: unknown stage '$stage'"; exit 2 ;;
  esac
  echo "stage $stage: $(since "$t0") s"
done
log "all done"
