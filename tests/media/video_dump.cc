// mmpt_video_dump VIDEO OUT_DIR [torchvision|pillow]: PreprocessVideo's output, frames resized
// by that rule (default: VideoSamplingRule's), for the video fidelity test
// (tests/python/test_video_fidelity.py), as NumPy files and one JSON line:
//   OUT_DIR/frames.npy        uint8 [frames, height, width, 3], the sampled frames as decoded
//                             (turned as displayed)
//   OUT_DIR/pixel_values.npy  float32 [patches, 1176], pixel_values_videos
//   OUT_DIR/meta.json         total_frames, video_fps, frame_indices, sample_fps, grid_thw,
//                             second_per_grid_t, height, width
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/media/video.h"

namespace {

using mmpt::Status;

// A version 1.0 .npy file: magic, header length, a dict padded so the data is 64-aligned.
Status WriteNpy(const std::string& path, const std::string& descr, const std::vector<size_t>& shape,
                const void* data, size_t size_bytes) {
  std::string dims;
  for (size_t d : shape) dims += std::to_string(d) + ", ";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(1);
  out += static_cast<char>(0);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(data), size_bytes);
  return mmpt::WriteFileAtomic(path, out);
}

Status Run(const std::string& video_path, const std::string& out_dir,
           const mmpt::media::VideoPreprocessConfig& config) {
  MMPT_ASSIGN_OR_RETURN(std::string bytes, mmpt::ReadFileToString(video_path));
  std::span<const std::byte> span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  MMPT_ASSIGN_OR_RETURN(mmpt::media::PreprocessedVideo video,
                        mmpt::media::PreprocessVideo(span, config));
  MMPT_ASSIGN_OR_RETURN(std::vector<mmpt::media::Image> frames,
                        mmpt::media::DecodeVideoFrames(span, video.sampling.frame_indices));
  std::vector<uint8_t> rgb;
  for (const auto& frame : frames) rgb.insert(rgb.end(), frame.pixels.begin(), frame.pixels.end());
  MMPT_RETURN_IF_ERROR(WriteNpy(out_dir + "/frames.npy", "|u1",
                                {frames.size(), frames[0].height, frames[0].width, 3}, rgb.data(),
                                rgb.size()));
  const size_t dim = video.pixel_values.size() / video.grid.patches();
  MMPT_RETURN_IF_ERROR(WriteNpy(
      out_dir + "/pixel_values.npy", "<f4", {static_cast<size_t>(video.grid.patches()), dim},
      video.pixel_values.data(), video.pixel_values.size() * sizeof(float)));
  std::string indices;
  for (uint64_t i : video.sampling.frame_indices) {
    indices += (indices.empty() ? "" : ", ") + std::to_string(i);
  }
  std::string meta = "{\"total_frames\": " + std::to_string(video.sampling.total_frames) +
                     ", \"video_fps\": " + fmt::format("{}", video.sampling.video_fps) +
                     ", \"frame_indices\": [" + indices + "]" +
                     ", \"sample_fps\": " + fmt::format("{}", video.sampling.sample_fps) +
                     ", \"grid_thw\": [" + std::to_string(video.grid.t) + ", " +
                     std::to_string(video.grid.h) + ", " + std::to_string(video.grid.w) + "]" +
                     ", \"second_per_grid_t\": " + fmt::format("{}", video.second_per_grid_t) +
                     ", \"height\": " + std::to_string(video.height) +
                     ", \"width\": " + std::to_string(video.width) + "}\n";
  return mmpt::WriteFileAtomic(out_dir + "/meta.json", meta);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string rule = argc == 4 ? argv[3] : "";
  if ((argc != 3 && argc != 4) || (argc == 4 && rule != "torchvision" && rule != "pillow")) {
    std::fprintf(stderr, "usage: mmpt_video_dump VIDEO OUT_DIR [torchvision|pillow]\n");
    return 2;
  }
  mmpt::media::VideoPreprocessConfig config;
  if (rule == "pillow") config.sampling.resize = mmpt::media::BicubicRule::kPillow;
  if (rule == "torchvision") config.sampling.resize = mmpt::media::BicubicRule::kTorchvision;
  Status status = Run(argv[1], argv[2], config);
  if (!status.ok()) {
    std::fprintf(stderr, "mmpt_video_dump: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
