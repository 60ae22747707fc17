#!/usr/bin/env bash
# Makes .gpu-carry/ (git-ignored), what bench/gpu_suite.sh needs on a GPU machine that has CUDA,
# PyTorch, CMake and ninja but no Debian packages and no network:
#   debs/  the C++ libraries the build links (scripts/install-deps.sh --print-libraries) and the
#          libraries they load, as Debian .deb files (apt-get download), less what every such
#          image has (glibc, the GCC runtime) and what neither a build nor an import reads
#          (fonts, compilers, interpreters, package tools);
#   real/  the real-data inputs the suite's corpus is made from, read from ../shared.
# Everything must fit in the device tool's 64 MiB carry; this script fails if it does not.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-carry
limit_mib=60
skip='^(libc6|libc6-dev|libc-dev-bin|libgcc-s1|libstdc\+\+6|lib(stdc\+\+|gcc)-[0-9]+-dev|gcc-.*|cpp-.*|g\+\+-.*|linux-libc-dev|libcrypt-dev|libcrypt1|libnsl.*|libtirpc.*|rpcsvc-proto|dpkg|perl.*|libperl.*|debconf.*|tar|fonts-.*|fontconfig-config|samba-.*|python3.*|libpython3.*|tzdata|sensible-utils|ucf|readline-common|init-system-helpers|media-types|x11-common|dconf-.*|gsettings-.*|adduser|passwd|login|libpam.*|libsystemd0|libudev1|libselinux1|libaudit.*|libcap-ng0|zlib1g|liblzma5|libbz2-1.0|libzstd1|libssl3|libgpg-error0|libgcrypt20|libkeyutils1|libcom-err2|libexpat1|libmd0|libbsd0|libtinfo6|libuuid1|libblkid1|libmount1|libpcre2-8-0|libffi8)$'

rm -rf "$out"
mkdir -p "$out/debs" "$out/real"
mapfile -t libraries < <(bash scripts/install-deps.sh --print-libraries)
mapfile -t packages < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${libraries[@]}" | grep -v '^ ' | grep -v '^<' |
  sort -u | grep -Ev "$skip")
(cd "$out/debs" && apt-get download -qq "${packages[@]}")
cp ../shared/data/real/coco_val2017_captions.json ../shared/data/real/mmc4_core_ff_docs.jsonl \
  "$out/real/"
size_mib=$(du -sm "$out" | cut -f1)
echo "fetch-gpu-carry: ${#packages[@]} packages and the real data, ${size_mib} MiB in $out"
if ((size_mib > limit_mib)); then
  echo "fetch-gpu-carry: over ${limit_mib} MiB: the device tool carries 64 MiB in all" >&2
  exit 1
fi
