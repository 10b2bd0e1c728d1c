# source tools/dev/device-env.sh — on the GPU machine of the `device` tool: use
# the loader and validation layer carried in .devkit/ (tools/dev/device-kit.sh)
# and the NVIDIA driver's ICD where the image keeps it; with .devkit/mpi,
# the dev root's Open MPI: mpirun on PATH, its libraries (which vkblr-fit
# and tests/mpi built with vkblr::mpi need even without mpirun) and its
# relocated prefixes.
_vkblr_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
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
if [ -f "$_vkblr_repo/.devkit/mpi.tar.gz" ] && [ ! -d "$_vkblr_repo/.devkit/mpi" ]; then
    tar -C "$_vkblr_repo/.devkit" -xzf "$_vkblr_repo/.devkit/mpi.tar.gz"
fi
if [ -d "$_vkblr_repo/.devkit/mpi" ]; then
    export PATH="$_vkblr_repo/.devkit/mpi/bin:$PATH"
    export LD_LIBRARY_PATH="$_vkblr_repo/.devkit/mpi/lib:$LD_LIBRARY_PATH"
    # Open MPI, PRRTE and PMIx find their help texts and components here
    # instead of under /usr. PMIx's own directories are named one by one:
    # prterun hands its PMIx server the configured prefix, which outranks
    # PMIX_PREFIX.
    export OPAL_PREFIX="$_vkblr_repo/.devkit/mpi" PRTE_PREFIX="$_vkblr_repo/.devkit/mpi"
    export PMIX_PREFIX="$_vkblr_repo/.devkit/mpi/pmix2"
    export PMIX_PKGDATADIR="$PMIX_PREFIX/share/pmix" PMIX_PKGLIBDIR="$PMIX_PREFIX/lib/pmix"
    # the dev root's /etc/openmpi/openmpi-mca-params.conf (not relocated, so
    # not read here), and ranks of one host only: shared memory, no TCP,
    # UCX or OFI
    export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_mtl='^ofi' OMPI_MCA_btl='self,sm'
    export OMPI_MCA_pml='^ucx' OMPI_MCA_osc='^ucx,pt2pt'
    if [ "$(id -u)" -eq 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
fi
unset _vkblr_repo
