#!/usr/bin/env bash
# The GPU run in one command, for a session lent a device (docs/benchmarks.md, "The GPU run"):
#
#   bash scripts/fetch-gpu-carry.sh     # here, once: .gpu-carry/debs-1, debs-2, ... (< 64 MiB each)
#   run(command="bash bench/gpu_suite.sh --unpack .gpu-carry/debs-1", carry=[".gpu-carry/debs-1"])
#   ... one such call per part but the last, back to back (the machine stays warm), then:
#   run(command="bash bench/gpu_suite.sh", carry=[".gpu-carry/debs-3"], timeout_s=540)
#   bash bench/gpu_suite.sh --dry                  # here (make test): CPU, tiny sizes, this build
#
# On the device (PyTorch + CUDA, CMake, ninja, no Debian dev packages, no network) each call
# unpacks the .deb files it carries into a private prefix, build/gpu-deps (kept between calls
# while the machine is warm; the first part also holds the real data, read in place of
# ../shared, which the device lacks); the last call builds mmpt's Python extension and native encoder
# against that machine's torch, then measures, writing every figure under $OUT:
#   1. the native encoder against transformers' Qwen2.5-VL and Qwen3-VL vision towers, same
#      weights, bf16 (bench/hf_encoder_check.py: agreement, Qwen3-VL's DeepStack features
#      included, time and peak memory per recompute mode);
#      and transformers' Qwen2.5-Omni and Qwen3-Omni audio towers encoding a track whole and one
#      attention window a clip, as mmpt hands a video's sound track over
#      (bench/hf_audio_window_check.py);
#   2. the replayed step at the seed's two scaled configurations (bench/replay_step.py);
#   3. the calibrated hardware preset (mfu and vision_mfu from the replay, native_encoder_factor
#      from 1), as $OUT/<device>.json, and $OUT/figures.json of everything.
# --dry runs the same steps on this machine's build (build/$MMPT_PRESET, default release), on the
# CPU at tiny sizes (step 1 beside step 2, which holds one core),
# with the transformers comparison skipped where transformers is absent: it cannot rot.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="$PWD/build/gpu-deps"
unpack() {  # the .deb files of .gpu-carry/debs-* present, into $deps
  local part
  for part in "$@"; do
    for deb in "$part"/*.deb; do dpkg-deb -x "$deb" "$deps"; done
    if [[ -d "$part/real" ]]; then
      rm -rf "$deps/real" && cp -r "$part/real" "$deps/real"
    fi
  done
}
dry=0
case "${1:-}" in
  --dry) dry=1 ;;
  --unpack) unpack "$2"; echo "gpu_suite: unpacked $2"; exit 0 ;;
esac
OUT=${OUT:-/tmp/mmpt-gpu-suite}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/mmpt-gpu-suite.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$SECONDS

if ((dry)); then
  python=/usr/bin/python3
  export PYTHONPATH="$PWD/build/${MMPT_PRESET:-release}/python"
  device=cpu
  encoder=(--tiny)
  # CP 2 at DP 2, one micro-step of 1024 tokens: every row, the CP emulation included.
  replay=(--dp 2 --ep 2 --ga 1 --seq-len 1024 --steps 1 --repeats 1 --jobs 1
          --captions 24 --documents 4 --max-pixels 25088)
else
  python=python3
  prefix="$deps"
  shopt -s nullglob
  unpack .gpu-carry/debs-*
  if [[ ! -d ../shared/data/real ]]; then
    mkdir -p ../shared/data && ln -s "$deps/real" ../shared/data/real
  fi
  arch_lib="$prefix/usr/lib/x86_64-linux-gnu"
  export PKG_CONFIG_PATH="$arch_lib/pkgconfig:$prefix/usr/share/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$prefix"
  export LD_LIBRARY_PATH="$arch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  torch_cmake=$($python -c 'import torch; print(torch.utils.cmake_prefix_path)')
  pybind11_cmake=$($python -c 'import pybind11; print(pybind11.get_cmake_dir())')
  cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMMPT_BENCH=OFF \
    -DMMPT_PYTHON=ON -DMMPT_WITH_TORCH=ON -DPython_EXECUTABLE="$(command -v $python)" \
    -DCMAKE_PREFIX_PATH="$prefix/usr;$torch_cmake;$pybind11_cmake" >"$OUT/configure.log"
  cmake --build build/gpu --target mmpt _mmpt _vision -j "$(nproc)" >"$OUT/build.log"
  export PYTHONPATH="$PWD/build/gpu/python"
  echo "gpu_suite: built in $((SECONDS - start)) s"
  device=cuda
  encoder=()
  # The replay's model on a GPU: Qwen2.5-VL-7B's vision width, a 1B-class decoder.
  replay=(--preset-name h200 --baseline-encoder hf --steps 1 --repeats 2 --bf16 --vocab 32768 --hidden 2048 --layers 4 --heads 16
          --kv-heads 4 --ffn 5632 --vit-layers 4 --vit-hidden 1280 --vit-heads 16
          --vit-mlp-hidden 3420 --max-pixels 1003520)
fi

check_encoders() {  # step 1, both towers, and the Omni audio towers' windows
  $python bench/hf_encoder_check.py --device $device "${encoder[@]}" --json "$OUT/encoder.json" |
    tee "$OUT/encoder.log"
  $python bench/hf_encoder_check.py --arch qwen3-vl --device $device "${encoder[@]}" \
    --json "$OUT/encoder-qwen3.json" | tee "$OUT/encoder-qwen3.log"
  $python bench/hf_audio_window_check.py --out "$OUT/audio-windows.json" |
    tee -a "$OUT/encoder-qwen3.log"
}
if ((dry)); then
  # On the CPU the replay holds one core (replay_step.py pins its one worker, one thread): the
  # encoder checks, mostly their processes' start, run beside it and print when it is done.
  check_encoders >/dev/null &
  encoders=$!
else
  check_encoders
fi
configs=(ep8 cp2)
((dry)) && configs=(cp2)
for config in "${configs[@]}"; do
  $python bench/replay_step.py --device $device "${replay[@]}" --config "$config" \
    --work "$work/replay-$config" --json "$OUT/replay-$config.json" | tee "$OUT/replay-$config.log"
done
if ((dry)); then
  status=0
  wait "$encoders" || status=$?
  cat "$OUT/encoder.log" "$OUT/encoder-qwen3.log" 2>/dev/null || true
  if ((status)); then
    echo "gpu_suite: the encoder checks failed ($status)" >&2
    exit "$status"
  fi
fi
$python - "$OUT" "${configs[@]}" <<'EOF'
import json, os, sys
out, configs = sys.argv[1], sys.argv[2:]
figures = {"encoder": json.load(open(os.path.join(out, "encoder.json"))),
           "encoder_qwen3": json.load(open(os.path.join(out, "encoder-qwen3.json")))}
if os.path.exists(os.path.join(out, "audio-windows.json")):  # needs transformers
    figures["audio_windows"] = json.load(open(os.path.join(out, "audio-windows.json")))
for config in configs:
    figures[f"replay_{config}"] = json.load(open(os.path.join(out, f"replay-{config}.json")))
preset = dict(figures[f"replay_{configs[0]}"]["preset"])
if "native_encoder_factor" in figures["encoder"]:
    preset["native_encoder_factor"] = round(figures["encoder"]["native_encoder_factor"], 4)
    preset["measured"] += "; native_encoder_factor by bench/hf_encoder_check.py"
with open(os.path.join(out, preset["name"] + ".json"), "w") as f:
    json.dump(preset, f, indent=2)
with open(os.path.join(out, "figures.json"), "w") as f:
    json.dump(figures, f, indent=2)
print(f"gpu_suite: preset {preset['name']}: mfu {preset['mfu']}, vision_mfu "
      f"{preset['vision_mfu']}, native_encoder_factor {preset.get('native_encoder_factor', '-')}")
EOF
echo "gpu_suite: done in $((SECONDS - start)) s; figures in $OUT"
