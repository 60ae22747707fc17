#include "mmpt/core/thread_pool.h"

#include <atomic>

namespace mmpt {

size_t WorkerThreads(size_t requested) {
  return requested > 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(size_t num_threads) {
  num_threads = WorkerThreads(num_threads);
  workers_.reserve(num_threads);
  for (size_t i = 0; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

void ThreadPool::Wait() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return tasks_.empty() && running_ == 0; });
}

void ThreadPool::ParallelFor(size_t begin, size_t end, const std::function<void(size_t)>& fn) {
  if (begin >= end) return;
  // Workers pull indices from a shared counter, so uneven items still spread evenly.
  std::atomic<size_t> next{begin};
  size_t chunks = std::min(workers_.size(), end - begin);
  std::mutex done_mu;
  std::condition_variable done_cv;
  size_t done = 0;
  for (size_t c = 0; c < chunks; ++c) {
    Submit([&] {
      for (size_t i = next.fetch_add(1); i < end; i = next.fetch_add(1)) fn(i);
      std::lock_guard lock(done_mu);
      if (++done == chunks) done_cv.notify_one();
    });
  }
  std::unique_lock lock(done_mu);
  done_cv.wait(lock, [&] { return done == chunks; });
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      ++running_;
    }
    task();
    {
      std::lock_guard lock(mu_);
      --running_;
      if (tasks_.empty() && running_ == 0) idle_cv_.notify_all();
    }
  }
}

}  // namespace mmpt
