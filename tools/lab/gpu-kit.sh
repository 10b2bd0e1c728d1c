#!/usr/bin/env bash
# tools/lab/gpu-kit.sh [--old REV] — here (the Debian 12 host, as root),
# everything a `device` call of tools/lab/ needs, in git-ignored folders:
#   .gpu/        vkblr-train, vkblr-fit, vkblr-bench, vkblr-tests of the
#                device preset (stripped, gzipped; the scripts unpack them)
#                and the reference model's corpus (corpus.tgz)
#   .gpu/old/    with --old REV: vkblr-bench of REV, the "before" of a
#                speed comparison in the same call (built in a worktree
#                under build/old-src, which the dev root sees)
#   .devkit/     the Vulkan loader, the validation layer (layers.tgz) and
#                glvnd's packages (tools/dev/device-kit.sh)
# Then carry [".gpu", ".devkit/lib", ".devkit/debs", ".devkit/layers.tgz"]
# (about 40 MB). A fresh machine takes ~25 minutes on 2 cores (the dev
# root, the two builds); later runs rebuild what changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
old=""
if [ "${1:-}" = --old ]; then old=$2; fi
dev=tools/dev/devenv.sh
$dev run -- sh -c 'cmake --preset device >/dev/null && cmake --build --preset device -j2 --target vkblr-train vkblr-fit vkblr-bench vkblr-tests'
mkdir -p .gpu build/gpu-kit
for b in tools/vkblr-train tools/vkblr-fit tools/vkblr-bench tests/vkblr-tests; do
  n=$(basename "$b")
  strip -o "build/gpu-kit/$n" "build/device/$b"
  gzip -c "build/gpu-kit/$n" > ".gpu/$n.gz"
  rm -f ".gpu/$n"  # an unpacked copy of an older build would shadow the new one
done
if [ ! -f .gpu/corpus.tgz ]; then
  $dev run -- sh -c 'apt-get update -qq >/dev/null 2>&1; python3 tools/model/make_corpus.py --out .corpus'
  tar -czf .gpu/corpus.tgz .corpus
fi
if [ -n "$old" ]; then
  [ -d build/old-src ] || git worktree add -f build/old-src "$old"
  git -C build/old-src checkout -q --detach "$old"
  $dev run -- sh -c 'cd build/old-src && cmake --preset device >/dev/null && cmake --build --preset device -j2 --target vkblr-bench'
  mkdir -p .gpu/old
  strip -o build/gpu-kit/vkblr-bench-old build/old-src/build/device/tools/vkblr-bench
  gzip -c build/gpu-kit/vkblr-bench-old > .gpu/old/vkblr-bench.gz
  rm -f .gpu/old/vkblr-bench
fi
if [ ! -f .devkit/layers.tgz ]; then
  tools/dev/device-kit.sh
  tar -C .devkit -czf .devkit/layers.tgz layers
fi
du -sh .gpu .devkit/lib .devkit/debs .devkit/layers.tgz
