#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace mmpt {

/// Draw a one-line progress bar on stderr for long work (only when stderr is a terminal, so
/// logs and CI output stay clean). Thread safety: Add may be called from any thread.
class ProgressBar {
 public:
  /// `total` units of work (0 if unknown), described by `label` ("prepare", "samples").
  ProgressBar(std::string label, uint64_t total, std::string unit = "items");
  /// Draw the final state and end the line.
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void Add(uint64_t done);
  uint64_t done() const { return done_.load(); }

 private:
  void Draw(bool final);

  std::string label_;
  std::string unit_;
  uint64_t total_;
  std::atomic<uint64_t> done_{0};
  bool enabled_;
  std::mutex draw_mu_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace mmpt
