# source tools/device-env.sh — on the GPU machine of the `device` tool: use
# the loader and validation layer carried in .devkit/ (tools/device-kit.sh)
# and the NVIDIA driver's ICD where the image keeps it.
_vkblr_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! ldconfig -p | grep -q libGLdispatch.so.0 && [ "$(id -u)" -eq 0 ]; then
    for _deb in "$_vkblr_repo"/.devkit/debs/*.deb; do dpkg -x "$_deb" /; done
    ldconfig
    unset _deb
fi
export LD_LIBRARY_PATH="$_vkblr_repo/.devkit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VK_LAYER_PATH="$_vkblr_repo/.devkit/layers"
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
unset _vkblr_repo
