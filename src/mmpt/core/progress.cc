#include "mmpt/core/progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace mmpt {

ProgressBar::ProgressBar(std::string label, uint64_t total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  if (enabled_) {
    Draw(true);
    std::fputc('\n', stderr);
  }
}

void ProgressBar::Add(uint64_t done) {
  done_.fetch_add(done, std::memory_order_relaxed);
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  // Redraw at most ten times a second; a busy caller must not pay for terminal writes.
  std::unique_lock lock(draw_mu_, std::try_to_lock);
  if (!lock.owns_lock() || now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(false);
}

void ProgressBar::Draw(bool final) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  uint64_t done = done_.load();
  double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  std::string bar;
  if (total_ > 0) {
    constexpr int kWidth = 30;
    int filled = static_cast<int>(kWidth * std::min(1.0, static_cast<double>(done) / total_));
    bar =
        fmt::format("[{}{}] {:3.0f}% ", std::string(filled, '#'), std::string(kWidth - filled, '.'),
                    100.0 * std::min(1.0, static_cast<double>(done) / total_));
  }
  fmt::print(stderr, "\r{} {}{}/{} {} {:.0f} {}/s{}", label_, bar, done, total_ > 0 ? total_ : done,
             unit_, rate, unit_, final ? " done" : "   ");
  std::fflush(stderr);
}

}  // namespace mmpt
