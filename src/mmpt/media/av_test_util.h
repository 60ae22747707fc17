#pragma once

// Test media made at test time by the ffmpeg CLI (Debian's `ffmpeg` package), so no binary
// fixtures live in the repository and every file is what the real encoders write.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/subprocess.h"
#include "mmpt/core/temp_dir_test_util.h"

namespace mmpt::media {

inline std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

/// A scratch folder of generated media, removed when the object goes.
class GeneratedMedia {
 public:
  GeneratedMedia() { dir_ = test_util::FreshDir("av_" + std::to_string(counter_++)); }
  ~GeneratedMedia() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  /// Run `ffmpeg -nostdin -y -loglevel error <args> <dir>/<name>` once and return the file's
  /// bytes (empty, with a test failure, when ffmpeg fails).
  std::string Make(const std::string& name, const std::string& args) {
    auto it = files_.find(name);
    if (it != files_.end()) return it->second;
    std::string path = (dir_ / name).string();
    auto out = RunCommand("ffmpeg -nostdin -y -loglevel error " + args + " '" + path + "' 2>&1");
    EXPECT_TRUE(out.ok()) << name << ": " << out.status().ToString();
    auto bytes = ReadFileToString(path);
    EXPECT_TRUE(bytes.ok()) << name << ": " << bytes.status().ToString();
    return files_[name] = bytes.ok() ? *std::move(bytes) : std::string();
  }

  const std::filesystem::path& dir() const { return dir_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::map<std::string, std::string> files_;
};

/// The media of all tests in this process: each file is made once, the folder removed at exit.
inline GeneratedMedia& SharedMedia() {
  static GeneratedMedia media;
  return media;
}

/// Arguments of the h264 + AAC mp4 several tests share: 320x240, 25 fps, 2 s (50 frames),
/// stereo 44.1 kHz; ffmpeg writes its moov index last.
inline const char* kBaseMp4 = "base.mp4";

/// ffmpeg input arguments for a moving test pattern of `seconds` at `fps`, `w`×`h`.
inline std::string TestPattern(int w, int h, int fps, double seconds) {
  return "-f lavfi -i testsrc2=size=" + std::to_string(w) + "x" + std::to_string(h) +
         ":rate=" + std::to_string(fps) + ":duration=" + std::to_string(seconds);
}

/// ffmpeg input arguments for a sine tone of `seconds` at `rate` Hz on `channels` channels.
inline std::string Tone(int rate, int channels, double seconds) {
  return "-f lavfi -i sine=frequency=440:sample_rate=" + std::to_string(rate) +
         ":duration=" + std::to_string(seconds) + " -ac " + std::to_string(channels);
}

/// The shared h264 + AAC mp4 (kBaseMp4).
inline std::string BaseMp4() {
  return SharedMedia().Make(kBaseMp4, TestPattern(320, 240, 25, 2) + " " + Tone(44100, 2, 2) +
                                          " -c:v libx264 -pix_fmt yuv420p -c:a aac -shortest");
}

}  // namespace mmpt::media
