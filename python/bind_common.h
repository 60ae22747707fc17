#pragma once

// Shared pieces of the `_mmpt` bindings: turning a Status into a Python exception, and the
// per-module Bind* entry points that module.cc calls. Errors become exceptions here and only
// here (STYLE.md: the Python boundary).

#include <pybind11/pybind11.h>

#include <utility>

#include "mmpt/core/status.h"

namespace mmpt::python {

namespace py = pybind11;

/// Create the exception classes (`Error` and one subclass per StatusCode) on `m`. Call once,
/// before any binding can throw.
void RegisterErrors(py::module_& m);

/// Raise the Python exception for `status`'s code, with the C++ message as its text.
/// `status` must not be OK. Needs the GIL.
[[noreturn]] void ThrowStatus(const Status& status);

/// Raise the Python exception for `status` if it is not OK.
/// Refuse keyword arguments a binding no longer takes (`given`, its **kwargs):
/// InvalidArgumentError naming the new name of a renamed one, TypeError for any other.
inline void RefuseRenamed(
    const py::kwargs& given,
    std::initializer_list<std::pair<std::string_view, std::string_view>> renamed) {
  for (const auto& [key, value] : given) {
    const std::string name = py::str(key);
    for (const auto& [old_name, new_name] : renamed) {
      if (name == old_name) {
        ThrowStatus(Status::InvalidArgument(
            "{}= is now {}= (the name the mmpt command, the C++ API and the docs use)", old_name,
            new_name));
      }
    }
    throw py::type_error("unexpected keyword argument '" + name + "'");
  }
}

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

/// Move the value out of `result`, or raise its error as a Python exception. Needs the GIL:
/// never call it inside a py::gil_scoped_release scope.
template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(*result);
}

void BindCore(py::module_& m);
void BindText(py::module_& m);
void BindMedia(py::module_& m);
void BindCost(py::module_& m);
void BindStore(py::module_& m);
void BindIngest(py::module_& m);
void BindCp(py::module_& m);
void BindLoad(py::module_& m);
void BindReplica(py::module_& m);
void BindExchange(py::module_& m);
void BindSim(py::module_& m);

}  // namespace mmpt::python
