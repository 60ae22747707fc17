#pragma once

// What the loading bindings share (bind_load.cc, bind_replica.cc, bind_exchange.cc): a batch's
// arrays as NumPy views over mmpt's own memory (each array's base keeps the Batch, a
// shared-memory message or a received buffer alive, so no byte is copied), and running native
// calls without the GIL.

#include <pybind11/numpy.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "bind_common.h"
#include "mmpt/load/batch_view.h"

namespace mmpt::python {

// Run `fn` (returning a Result) with the GIL released; errors are raised by the caller after
// the GIL is back (raising needs it).
template <typename Fn>
auto WithoutGil(Fn&& fn) -> decltype(fn()) {
  py::gil_scoped_release release;
  return fn();
}

// A NumPy array of `data` (shape in elements) kept alive by `owner`, or a fresh empty one.
template <typename T>
py::array View(std::span<const T> data, std::vector<py::ssize_t> shape, py::handle owner) {
  if (data.empty()) return py::array(py::dtype::of<T>(), shape);
  return py::array(py::dtype::of<T>(), shape, {}, data.data(), owner);
}
inline py::array View1(auto data, py::handle owner) {
  return View(data, {static_cast<py::ssize_t>(data.size())}, owner);
}

// The fields of `v` within `fields` as a dict of NumPy arrays over `owner`'s memory (the
// batch, a shared-memory message or a received buffer): no byte is copied.
py::dict ViewToDict(const load::BatchView& v, uint32_t fields, py::handle owner);

// An owner object (a capsule) keeping `value` alive while any array over it lives.
template <typename T>
py::capsule Keep(std::shared_ptr<T> value) {
  return py::capsule(new std::shared_ptr<T>(std::move(value)),
                     [](void* p) { delete static_cast<std::shared_ptr<T>*>(p); });
}

// A uint8 NumPy array's bytes; InvalidArgument unless it is one contiguous array.
std::span<const std::byte> BytesOf(const py::array& array);

inline std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace mmpt::python
