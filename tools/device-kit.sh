#!/usr/bin/env bash
# tools/device-kit.sh — gather what a vkblr binary needs on a machine whose
# image has a GPU driver but no Vulkan loader or validation layer (the H200
# of the `device` tool): the loader and the Khronos validation layer of the
# dev root, copied into .devkit/ (git-ignored; carry it with the build).
#
# On that machine:  source tools/device-env.sh   (unpacks the glvnd packages,
# sets LD_LIBRARY_PATH, VK_LAYER_PATH and the NVIDIA ICD) — docs/gpu.md.
# Runs on the Debian 12 host as root (apt-get download of amd64 packages).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
root=$("$here/devenv.sh" path)
[ -d "$root/usr/lib/x86_64-linux-gnu" ] || { echo "device-kit: no dev root at $root (run tools/devenv.sh setup)" >&2; exit 1; }
kit=$repo/.devkit
rm -rf "$kit"
mkdir -p "$kit/lib" "$kit/layers"
lib=$root/usr/lib/x86_64-linux-gnu
cp -L "$lib/libvulkan.so.1" "$kit/lib/libvulkan.so.1"
cp -L "$lib/libVkLayer_khronos_validation.so" "$kit/layers/"
# the manifest names the library relative to itself
sed 's#"library_path": *"[^"]*"#"library_path": "./libVkLayer_khronos_validation.so"#' \
    "$root/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" >"$kit/layers/VkLayer_khronos_validation.json"
# glvnd and the loader of the host's Debian: the NVIDIA ICD (libGLX_nvidia)
# needs libGLdispatch from libglvnd0, which that image lacks
mkdir -p "$kit/debs" /tmp/vkblr-amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/vkblr-amd64'
apt-get $o update -qq >/dev/null
(cd "$kit/debs" && apt-get $o download -qq libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 2>/dev/null)
du -sh "$kit"
