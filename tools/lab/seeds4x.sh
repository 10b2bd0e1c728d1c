#!/usr/bin/env bash
# tools/lab/seeds4x.sh — one device call: the 4x distillation from vkblr-fit's layers, both
# trainers at lr 4e-3 (latents at ±0.1, 600 steps of 8 windows of 1024), once for each of three
# seeds of the windows' order (the same windows): the spread of each. The six runs share the GPU
# at once (their results do not depend on it).
# Before, here: tools/lab/gpu-kit.sh; carry [".gpu", ".devkit/lib", ".devkit/debs", ".devkit/layers.tgz"].
# About 8 minutes (the reference model, vkblr-fit's layers and the token files first); results in
# $OUT/seeds4x.tgz, the table (each trainer's three results, mean, sd, range) on stdout.
set -u
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
for f in .gpu/*.gz; do gunzip -kf $f; done; chmod +x .gpu/vkblr-*
[ -d .devkit/layers ] || { mkdir -p .devkit/layers && tar -C .devkit -xzf .devkit/layers.tgz; }
source tools/dev/device-env.sh
export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
W=.model-work; S=/tmp/seeds4x; mkdir -p $S
echo "== setup ($(el) s)"
HF_CHECK=0 OUT=$S timeout 300 tools/lab/model-checks.sh train bpw1 tokens > $S/setup.log 2>&1; echo "setup rc $?"
grep -E "^train_reference|^layerwise|^stage" $S/setup.log
blr=$(python3 -c "import json; print(json.load(open('$W/bpw1/report.json'))['files'][0])")
echo "== runs ($(el) s)"
for s in 1 2 3; do
  timeout $(( 585 - $(el) )) python3 tools/lab/qat_peer.py --model $W/reference --corpus .corpus --out $S/peer-seed$s.json \
    --from-blr "$blr" --train-tokens 147456 --steps 600 --batch 8 --eval-every 600 --lr 4e-3 --compile none \
    --device cuda --flip-check 5 --require-flips --order-seeds $s > $S/peer-seed$s.log 2>&1 &
  timeout $(( 585 - $(el) )) .gpu/vkblr-train --model $W/reference --blr "$blr" --latent-rms 0.1 --seed $s \
    --train $W/tokens4x/train_windows.npy --held-out $W/tokens4x/heldout.npy --steps 600 --batch 8 --warmup 30 \
    --eval-every 600 --lr 4e-3 --out $S/vt-seed$s --quiet > $S/vt-seed$s.log 2>&1 &
done
wait
echo "== table ($(el) s)"
python3 - $S <<'PY' | tee $S/table.txt
import json, os, statistics, sys
d = sys.argv[1]
for name, path, get in (("peer", "peer-seed{}.json", lambda j: j["runs"][0]["final"]["bits_per_byte"]),
                        ("vkblr-train", "vt-seed{}/report.json", lambda j: j["final"]["bits_per_byte"])):
    vals = []
    for s in (1, 2, 3):
        try:
            vals.append(get(json.load(open(os.path.join(d, path.format(s))))))
        except Exception as e:
            print(name, s, "missing", e)
    if vals:
        sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
        print(f"{name:12s} " + " ".join(f"{v:.4f}" for v in vals) + f"  mean {statistics.mean(vals):.4f} sd {sd:.4f}"
              f" range {max(vals) - min(vals):.4f}")
PY
tail -2 $S/peer-seed*.log $S/vt-seed*.log
mkdir -p $S/pack; cp $S/*.json $S/*.log $S/table.txt $S/pack/ 2>/dev/null
for s in 1 2 3; do cp $S/vt-seed$s/report.json $S/pack/vt-seed$s.json 2>/dev/null; done
tar -czf $OUT/seeds4x.tgz -C $S/pack .
echo "== done ($(el) s)"
