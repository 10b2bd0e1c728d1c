#!/usr/bin/env bash
# tools/dev/device-kit.sh — gather what a vkblr binary needs on a machine whose
# image has a GPU driver but no Vulkan loader or validation layer (the H200
# of the `device` tool): the loader and the Khronos validation layer of the
# dev root, copied into .devkit/ (git-ignored; carry it with the build).
#
# Also the dev root's Open MPI 5 (that image has no MPI): mpirun, PRRTE's
# prterun, their help files and every library they and an MPI program
# (vkblr-fit, tests/mpi) load, but glibc, as a relocatable prefix packed in
# .devkit/mpi.tar.gz (17 MB unpacked, 6.5 MB packed: the carry is limited);
# device-env.sh unpacks it into .devkit/mpi/.
#
# On that machine:  source tools/dev/device-env.sh   (unpacks the glvnd packages,
# sets LD_LIBRARY_PATH, VK_LAYER_PATH, the NVIDIA ICD, PATH and Open MPI's
# prefixes) — docs/gpu.md, docs/mpi.md.
# Runs on the Debian 12 host as root (apt-get download of amd64 packages).
# Fails when a file of the kit needs a glibc newer than the machine's 2.39.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=$("$here/devenv.sh" path)
[ -d "$root/usr/lib/x86_64-linux-gnu" ] || { echo "device-kit: no dev root at $root (run tools/dev/devenv.sh setup)" >&2; exit 1; }
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

# Open MPI 5 (Debian's packages: prefix /usr, PRRTE and PMIx external) laid
# out as a prefix of its own: OPAL_PREFIX = PRTE_PREFIX = .devkit/mpi finds
# share/openmpi and share/prte (help texts); PMIX_PREFIX = .devkit/mpi/pmix2
# its help texts and component; lib/ holds every shared library (flat, for
# LD_LIBRARY_PATH). mpirun execs the prterun beside it.
mpi=$kit/mpi
mkdir -p "$mpi/bin" "$mpi/lib" "$mpi/share" "$mpi/pmix2/lib/pmix"
cp -L "$root/usr/bin/mpirun.openmpi" "$mpi/bin/mpirun"
cp -L "$root/usr/bin/prte" "$root/usr/bin/prted" "$mpi/bin/"
ln -s prte "$mpi/bin/prterun"
cp -r "$root/usr/share/openmpi" "$root/usr/share/prte" "$mpi/share/"
cp -r "$root/usr/lib/x86_64-linux-gnu/pmix2/share" "$mpi/pmix2/"
cp -L "$root"/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so "$mpi/pmix2/lib/pmix/"
# the libraries: what the dynamic loader of the root resolves for them, but
# glibc's own (the machine's glibc 2.39 serves those)
"$here/devenv.sh" run -- ldd /usr/bin/mpirun.openmpi /usr/bin/prte /usr/bin/prted \
    /usr/lib/x86_64-linux-gnu/libmpi.so.40 /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/pmix_mca_pcompress_zlib.so |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
        case "$name" in
            libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | ld-linux*) ;;
            *) cp -L "$root$path" "$mpi/lib/$name" ;;
        esac
    done
cp -L "$root/usr/lib/x86_64-linux-gnu/libmpi.so.40" "$mpi/lib/"

# glibc: the machine has 2.39 (objdump of the root; the kit is under the
# repository, which the root sees at the same path)
"$here/devenv.sh" run -- bash -c '
    max=2.39 status=0
    while IFS= read -r f; do
        need=$(objdump -T "$f" | grep -oE "GLIBC_[0-9]+\.[0-9]+" | sed "s/GLIBC_//" | sort -uV | tail -n1)
        if [ -n "$need" ] && [ "$(printf "%s\n%s\n" "$need" "$max" | sort -V | tail -n1)" != "$max" ]; then
            echo "device-kit: ${f#"$1"/} needs glibc $need > $max" >&2
            status=1
        fi
    done < <(find "$1" -type f ! -path "$1/debs/*" -exec sh -c "head -c4 \"\$1\" | grep -q ELF" _ {} \; -print)
    [ "$status" -eq 0 ] && echo "device-kit: every ELF file of the kit needs glibc <= $max"
    exit "$status"' check "$kit"
du -sh "$mpi"
tar -C "$kit" -czf "$kit/mpi.tar.gz" mpi
rm -rf "$mpi"
du -sh "$kit/mpi.tar.gz"
du -sh "$kit"
