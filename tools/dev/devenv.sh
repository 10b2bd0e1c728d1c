#!/usr/bin/env bash
# tools/dev/devenv.sh — the Debian 13 (trixie) root that vkblr builds and tests in.
#
# Debian 12's glslang, Vulkan headers and Mesa are too old for cooperative
# matrices; this script makes a trixie root (mmdebstrap, packages from
# tools/dev/devenv.packages, Mesa from trixie-backports for lavapipe with
# VK_KHR_cooperative_matrix) and runs commands inside it.
#
#   tools/dev/devenv.sh setup          make the root, add the packages the list gained
#                                  since, or do nothing when it is current
#   tools/dev/devenv.sh run -- CMD...  run CMD inside (setup first when needed)
#   tools/dev/devenv.sh shell          an interactive shell inside
#   tools/dev/devenv.sh path           print where the root lives
#
# Inside, the repository is at the same path as outside and CMD starts in
# the same directory. Each run enters a private mount namespace
# (unshare -m --propagation private) and bind-mounts /proc, /sys, /dev and
# the repository there, so nothing stays mounted when it ends, whatever way
# it ends. Needs root (chroot, mount namespaces). The Vulkan loader inside
# sees lavapipe only (VK_DRIVER_FILES, unless the caller sets it): the
# root's other Mesa drivers look for hardware it does not have, and NVK
# (Mesa 26.1.6) leaks at that probe where LeakSanitizer cannot name it.
#
# Environment:
#   VKBLR_DEVROOT        where the root lives (default /var/cache/vkblr/devroot-trixie)
#   VKBLR_DEBIAN_MIRROR  Debian archive (default http://deb.debian.org/debian)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=${VKBLR_DEVROOT:-/var/cache/vkblr/devroot-trixie}
mirror=${VKBLR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
pkgfile=$here/devenv.packages
# Bump when the recipe below changes in a way the package list does not show.
recipe_version=1
stamp_file=etc/vkblr-devroot.stamp
input_file=etc/vkblr-devroot.input  # the recipe, the mirror and the packages the root holds
min_free_mb=3000

die() { echo "devenv: $*" >&2; exit 1; }
say() { echo "devenv: $*" >&2; }

need_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root: it makes a chroot and private mount namespaces (try: sudo $0 $*)"
}

# Package list without comments: plain names, then backports names.
packages() { sed -e 's/#.*//' -e 's/[[:space:]]//g' "$pkgfile" | grep -v '^$' | grep -v '@backports$' || true; }
backports() { sed -e 's/#.*//' -e 's/[[:space:]]//g' "$pkgfile" | grep '@backports$' | sed 's/@backports$//' || true; }

# What the root is made from: the recipe, the mirror, the package list.
wanted_input() { echo "recipe $recipe_version"; echo "mirror $mirror"; cat "$pkgfile"; }
wanted_stamp() { wanted_input | sha256sum | cut -d' ' -f1; }

# The root serves this checkout when it was made from this recipe, mirror
# and list, or holds every package of the list by the same recipe and
# mirror (a root extended for a longer list serves a shorter one: a fresh
# root, as CI makes, is the check that nothing unlisted is needed).
is_current() {
    [ -f "$root/$stamp_file" ] || return 1
    [ "$(cat "$root/$stamp_file")" = "$(wanted_stamp)" ] && return 0
    same_recipe && [ -z "$(missing_packages)" ]
}

check_network() {
    local host port
    host=$(echo "$mirror" | sed -E 's#^[a-z]+://([^/:]+).*#\1#')
    port=80
    case "$mirror" in https://*) port=443 ;; esac
    if ! timeout 15 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
        die "cannot reach $host:$port (Debian's archive). The dev root is made from it: check the network or proxy, or point VKBLR_DEBIAN_MIRROR at a reachable mirror."
    fi
}

check_disk() {
    local dir avail
    dir=$(dirname "$root")
    mkdir -p "$dir"
    avail=$(df -Pm "$dir" | awk 'NR == 2 { print $4 }')
    if [ "${avail:-0}" -lt "$min_free_mb" ]; then
        die "only ${avail} MB free under $dir; the dev root needs about ${min_free_mb} MB (set VKBLR_DEVROOT to a roomier place)"
    fi
}

ensure_mmdebstrap() {
    command -v mmdebstrap >/dev/null && return
    say "installing mmdebstrap from this machine's Debian archive"
    apt-get update -qq >&2 || die "apt-get update failed: cannot install mmdebstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >&2 || die "cannot install mmdebstrap"
}

# Refuse to delete a root that something still has mounted (a run started
# outside a private namespace by hand, say).
assert_unmounted() {
    if grep -q " $1[/ ]" /proc/self/mounts 2>/dev/null; then
        die "$1 has mounts under it; unmount them first (grep ' $1' /proc/self/mounts)"
    fi
}

# Package names of a list on stdin, one per line, sorted ("x@backports" kept).
list_names() { sed -e 's/#.*//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u || true; }

# Whether the root was made by this recipe from this mirror.
same_recipe() {
    [ -f "$root/$input_file" ] && [ "$(head -n 2 "$root/$input_file")" = "$(wanted_input | head -n 2)" ]
}

# The packages of the list the root does not hold, one per line.
missing_packages() {
    comm -13 <(tail -n +3 "$root/$input_file" | list_names) <(list_names <"$pkgfile")
}

# Installs the packages of the list the root lacks into the root as it is,
# when it was made by the same recipe and mirror (keeping the root and its
# compile cache); returns 1 when the root must be made again instead.
extend_root() {
    same_recipe || return 1
    local added plain bp
    added=$(missing_packages)
    plain=$(echo "$added" | grep -v '@backports$' | paste -sd' ' - || true)
    bp=$(echo "$added" | grep '@backports$' | sed 's/@backports$//' | paste -sd' ' - || true)
    say "adding to the dev root: ${plain}${bp:+ $bp (backports)} (log: $root.log)"
    check_network
    local install="apt-get update -q && export DEBIAN_FRONTEND=noninteractive"
    [ -n "$plain" ] && install="$install && apt-get install -y -q $plain"
    [ -n "$bp" ] && install="$install && apt-get install -y -q -t trixie-backports $bp"
    if ! unshare -m --propagation private -- "$0" _enter "$repo" sh -c "$install" >"$root.log" 2>&1; then
        tail -n 20 "$root.log" >&2
        die "could not add the packages to the dev root (full log: $root.log)"
    fi
    # what the root holds now: every package it had and the list's
    { wanted_input | head -n 2; { tail -n +3 "$root/$input_file" | list_names; echo "$added"; } | grep -v "^$" | sort -u; } \
        >"$root/$input_file.new"
    mv "$root/$input_file.new" "$root/$input_file"
    wanted_stamp >"$root/$stamp_file"
    say "dev root extended"
}

cmd_setup() {
    need_root setup
    mkdir -p "$(dirname "$root")"
    # adding packages removes nothing a running command uses: it waits only
    # for another setup, not for the runs (which hold $root.lock shared)
    exec 8>"$root.extend.lock"
    flock 8
    if is_current; then
        say "dev root at $root is current"
        return
    fi
    check_disk
    extend_root && return
    exec 9>"$root.lock"
    flock 9
    check_network
    ensure_mmdebstrap
    local new=$root.new
    assert_unmounted "$new"
    rm -rf "$new"
    local suite_lines=("deb $mirror trixie main" "deb $mirror trixie-backports main")
    local include
    include=$(packages | paste -sd, -)
    local hook=""
    local bp
    bp=$(backports | paste -sd' ' -)
    if [ -n "$bp" ]; then
        hook="chroot \"\$1\" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -t trixie-backports $bp"
    fi
    say "making the dev root at $root (about 90 s and 1.4 GB; log: $root.log)"
    local start=$SECONDS
    if ! mmdebstrap --variant=apt --components=main --include="$include" \
        ${hook:+--customize-hook="$hook"} \
        trixie "$new" "${suite_lines[@]}" >"$root.log" 2>&1; then
        tail -n 20 "$root.log" >&2
        rm -rf "$new"
        die "mmdebstrap failed (full log: $root.log)"
    fi
    wanted_input >"$new/$input_file"
    wanted_stamp >"$new/$stamp_file"
    if [ -e "$root" ]; then
        assert_unmounted "$root"
        rm -rf "$root"
    fi
    mv "$new" "$root"
    say "dev root ready in $((SECONDS - start)) s"
}

# Variables that cross into the root; everything else starts clean there.
passed_env() {
    local name
    for name in $(compgen -e); do
        case "$name" in
            TERM | COLORTERM | COLUMNS | LINES | NO_COLOR | CI | CLICOLOR_FORCE | \
                VKBLR_* | VK_* | CTEST_* | CMAKE_BUILD_PARALLEL_LEVEL | ASAN_OPTIONS | \
                UBSAN_OPTIONS | LSAN_OPTIONS | OMPI_* | OUT)
                printf '%s=%s\0' "$name" "${!name}"
                ;;
        esac
    done
}

# Runs inside the private mount namespace: mount, then chroot and exec.
cmd_enter() {
    local cwd=$1
    shift
    for d in proc sys dev; do
        mount --rbind "/$d" "$root/$d"
        mount --make-rslave "$root/$d"
    done
    mkdir -p "$root$repo"
    mount --bind "$repo" "$root$repo"
    local envs=()
    while IFS= read -r -d '' kv; do envs+=("$kv"); done < <(passed_env)
    exec chroot "$root" /usr/bin/env -i \
        HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        VKBLR_IN_DEVROOT=1 CCACHE_DIR=/var/cache/ccache CCACHE_BASEDIR="$repo" CCACHE_NOHASHDIR=true \
        VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.json \
        "${envs[@]}" \
        /bin/bash -c 'cd "$1" && shift && exec "$@"' devenv "$cwd" "$@"
}

inside_cwd() {
    case "$PWD/" in
        "$repo"/*) echo "$PWD" ;;
        *) echo "$repo" ;;
    esac
}

cmd_run() {
    need_root run
    [ $# -gt 0 ] || die "usage: $0 run -- CMD [ARGS...]"
    is_current || cmd_setup
    exec 9>"$root.lock"
    flock -s 9
    exec unshare -m --propagation private -- "$0" _enter "$(inside_cwd)" "$@"
}

case "${1:-}" in
    setup) cmd_setup ;;
    run)
        shift
        [ "${1:-}" = "--" ] && shift
        cmd_run "$@"
        ;;
    shell)
        shift
        cmd_run /bin/bash -i
        ;;
    path) echo "$root" ;;
    _enter)
        shift
        cmd_enter "$@"
        ;;
    *)
        sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
