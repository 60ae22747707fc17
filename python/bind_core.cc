// Bindings of mmpt::core: the exception classes every binding raises, hashing and file helpers.

#include <Python.h>

#include <array>
#include <cstddef>
#include <span>
#include <string>

#include "bind_common.h"
#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::python {
namespace {

// One class per StatusCode, indexed by the code's value; kOk's slot stays empty. The objects
// live as long as the interpreter (the module keeps references too).
std::array<PyObject*, static_cast<size_t>(StatusCode::kTimeout) + 1> g_error_classes{};

PyObject* NewErrorClass(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  std::string qualified = std::string("mmpt.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (cls == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // steals nothing: add_object increfs
  return cls;
}

}  // namespace

void RegisterErrors(py::module_& m) {
  PyObject* base = NewErrorClass(m, "Error", PyExc_Exception,
                                 "Base of every error mmpt raises; the text is the C++ message.");
  struct Spec {
    StatusCode code;
    const char* name;
    PyObject* builtin;  // the built-in exception it also derives from, so generic handlers work
    const char* doc;
  };
  const Spec specs[] = {
      {StatusCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError,
       "A bad argument or bad input record."},
      {StatusCode::kNotFound, "NotFoundError", PyExc_FileNotFoundError,
       "A file, key or sample that does not exist."},
      {StatusCode::kIOError, "IOError", PyExc_OSError, "A read or write that failed."},
      {StatusCode::kCorrupt, "CorruptError", PyExc_ValueError,
       "Bytes that do not parse as the format they claim."},
      {StatusCode::kOutOfRange, "OutOfRangeError", PyExc_IndexError,
       "A value or index outside what is supported."},
      {StatusCode::kCancelled, "CancelledError", nullptr, "An operation that was cancelled."},
      {StatusCode::kInternal, "InternalError", PyExc_RuntimeError, "A bug in mmpt."},
      {StatusCode::kTimeout, "TimeoutError", PyExc_TimeoutError,
       "A peer rank that did not answer in time (it died or fell behind)."},
  };
  for (const Spec& spec : specs) {
    py::tuple bases = spec.builtin == nullptr
                          ? py::make_tuple(py::handle(base))
                          : py::make_tuple(py::handle(base), py::handle(spec.builtin));
    g_error_classes[static_cast<size_t>(spec.code)] =
        NewErrorClass(m, spec.name, bases.ptr(), spec.doc);
  }
  // For extension modules of the package (mmpt._vision), which raise these same classes.
  m.def(
      "_error_class",
      [](int code) {
        PyObject* cls = code >= 0 && static_cast<size_t>(code) < g_error_classes.size()
                            ? g_error_classes[code]
                            : nullptr;
        if (cls == nullptr) cls = g_error_classes[static_cast<size_t>(StatusCode::kInternal)];
        return py::reinterpret_borrow<py::object>(cls);
      },
      py::arg("code"), "The exception class mmpt raises for a StatusCode.");
  m.def(
      "_error_code",
      [](const py::handle& error) {
        for (size_t code = 1; code < g_error_classes.size(); ++code) {
          if (g_error_classes[code] == reinterpret_cast<PyObject*>(Py_TYPE(error.ptr()))) {
            return static_cast<int>(code);
          }
        }
        return static_cast<int>(StatusCode::kInternal);
      },
      py::arg("error"),
      "The StatusCode of an mmpt exception (Internal for any other), so a failure can be "
      "passed on to other ranks as the same class.");
}

void ThrowStatus(const Status& status) {
  PyObject* cls = g_error_classes[static_cast<size_t>(status.code())];
  if (cls == nullptr) cls = g_error_classes[static_cast<size_t>(StatusCode::kInternal)];
  PyErr_SetString(cls, status.message().c_str());
  throw py::error_already_set();
}

void BindCore(py::module_& m) {
  m.def(
      "hash64",
      [](py::buffer data, uint64_t seed) {
        py::buffer_info info = data.request();
        if (!PyBuffer_IsContiguous(info.view(), 'C')) {
          ThrowStatus(Status::InvalidArgument("hash64: the buffer must be C-contiguous"));
        }
        std::span<const std::byte> bytes(static_cast<const std::byte*>(info.ptr),
                                         static_cast<size_t>(info.size * info.itemsize));
        py::gil_scoped_release release;
        return Hash64(bytes, seed);
      },
      py::arg("data"), py::arg("seed") = 0,
      "XXH3-64 of the bytes of a contiguous buffer (bytes, bytearray, NumPy array); the hash "
      "mmpt uses for plan hashes and checksums, stable across machines.");
  m.def(
      "read_file",
      [](const std::string& path) {
        Result<std::string> contents = [&] {
          py::gil_scoped_release release;
          return ReadFileToString(path);
        }();
        std::string text = ValueOrThrow(std::move(contents));
        return py::bytes(text);
      },
      py::arg("path"), "Read a whole file. Raises NotFoundError or IOError naming the path.");
  m.def(
      "write_file_atomic",
      [](const std::string& path, py::bytes data) {
        std::string contents = data;
        Status status;
        {
          py::gil_scoped_release release;
          status = WriteFileAtomic(path, contents);
        }
        ThrowIfError(status);
      },
      py::arg("path"), py::arg("data"),
      "Write bytes to `path` atomically (temporary file, fsync, rename). Raises IOError.");
}

}  // namespace mmpt::python
