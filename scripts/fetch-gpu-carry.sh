#!/usr/bin/env bash
# Makes .gpu-carry/ (git-ignored), what bench/gpu_suite.sh needs on a GPU machine that has CUDA,
# PyTorch, CMake and ninja but no Debian packages and no network:
#   debs-1/, debs-2/, ...  the C++ libraries the build links (scripts/install-deps.sh
#          --print-libraries) and every library they load, as Debian .deb files (apt-get
#          download of the versions installed here), less what every such image has (glibc, the
#          GCC runtime) and what neither a build nor an import reads (fonts, compilers,
#          interpreters, package tools). FFmpeg's codecs and ICU alone pass the device tool's
#          64 MiB a call, so they are split into parts of at most 48 MiB (with the 4 MiB tree and
#          the real data, under 64): one call carries each part (bench/gpu_suite.sh --unpack),
#          the last runs the suite;
#   real/  the real-data inputs the suite's corpus is made from, read from ../shared (in the
#          first part's call).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-carry
limit_mib=48
skip='^(libc6|libc6-dev|libc-dev-bin|libgcc-s1|libstdc\+\+6|lib(stdc\+\+|gcc)-[0-9]+-dev|gcc-.*|cpp-.*|g\+\+-.*|linux-libc-dev|libcrypt-dev|libcrypt1|libnsl.*|libtirpc.*|rpcsvc-proto|dpkg|perl.*|libperl.*|debconf.*|tar|fonts-.*|fontconfig-config|samba-.*|python3.*|libpython3.*|tzdata|sensible-utils|ucf|readline-common|init-system-helpers|media-types|x11-common|dconf-.*|gsettings-.*|adduser|passwd|login|libpam.*|libsystemd0|libudev1|libselinux1|libaudit.*|libcap-ng0|zlib1g|liblzma5|libbz2-1.0|libzstd1|libssl3|libgpg-error0|libgcrypt20|libkeyutils1|libcom-err2|libexpat1|libmd0|libbsd0|libtinfo6|libuuid1|libblkid1|libmount1|libpcre2-8-0|libffi8)$'

rm -rf "$out"
mkdir -p "$out/all" "$out/real"
mapfile -t libraries < <(bash scripts/install-deps.sh --print-libraries)
mapfile -t packages < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances --installed "${libraries[@]}" | grep -v '^ ' |
  grep -v '^<' | sort -u | grep -Ev "$skip")
(cd "$out/all" && apt-get download -qq "${packages[@]}" 2>/dev/null)
cp ../shared/data/real/coco_val2017_captions.json ../shared/data/real/mmc4_core_ff_docs.jsonl \
  "$out/real/"
# Parts of at most limit_mib, largest files first into the first part with room.
part_kib=$((limit_mib * 1024))
declare -a used=()
while read -r kib file; do
  for ((i = 1; ; i++)); do
    if ((${used[i]:-0} + kib <= part_kib)); then
      used[i]=$((${used[i]:-0} + kib))
      mkdir -p "$out/debs-$i"
      mv "$out/all/$file" "$out/debs-$i/"
      break
    fi
  done
done < <(cd "$out/all" && du -k -- *.deb | sort -rn)
rmdir "$out/all"
mv "$out/real" "$out/debs-1/real"
echo "fetch-gpu-carry: ${#packages[@]} packages in ${#used[@]} parts of $(du -sm "$out"/debs-* |
  cut -f1 | paste -sd/) MiB (the first with the real data), in $out"
