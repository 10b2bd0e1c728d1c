#!/usr/bin/env bash
# tools/dev/check-glibc.sh MAX DIR... — fail when an executable under DIR needs a
# glibc symbol version newer than MAX (e.g. 2.39, the H200 machine's Ubuntu
# 24.04) or links libstdc++/libgcc_s dynamically (the `device` preset links
# them statically).
set -euo pipefail
max=$1
shift
status=0
while IFS= read -r f; do
    need=$(objdump -T "$f" 2>/dev/null | grep -oE 'GLIBC_[0-9]+\.[0-9]+' | sed 's/GLIBC_//' | sort -uV | tail -n1)
    if [ -n "$need" ] && [ "$(printf '%s\n%s\n' "$need" "$max" | sort -V | tail -n1)" != "$max" ]; then
        echo "$f needs glibc $need > $max" >&2
        status=1
    fi
    if objdump -p "$f" | grep -qE 'NEEDED +(libstdc\+\+|libgcc_s)'; then
        echo "$f links the C++ runtime dynamically" >&2
        status=1
    fi
    echo "$f: glibc ${need:-none}"
done < <(find "$@" -type f -perm -u+x -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
exit $status
