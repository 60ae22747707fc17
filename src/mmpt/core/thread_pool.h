#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mmpt {

/// Worker threads for a `--threads` or `threads=` setting: `requested`, or one per hardware
/// thread for 0 (the one place that rule is decided).
size_t WorkerThreads(size_t requested);

/// Run submitted tasks on a fixed set of worker threads.
/// Thread safety: Submit and Wait may be called from any thread.
class ThreadPool {
 public:
  /// Start `num_threads` workers (0 means one per hardware thread).
  explicit ThreadPool(size_t num_threads = 0);
  /// Finish every queued task, then join the workers.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Queue `task` to run on some worker.
  void Submit(std::function<void()> task);
  /// Block until every task submitted so far has finished.
  void Wait();
  size_t size() const { return workers_.size(); }

  /// Call `fn(i)` for every i in [begin, end) across the pool's workers and wait for all.
  void ParallelFor(size_t begin, size_t end, const std::function<void(size_t)>& fn);

 private:
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> tasks_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace mmpt
