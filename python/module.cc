// The `_mmpt` extension module: one Bind* call per mmpt module (python/bind_<module>.cc). The
// package python/mmpt re-exports it.

#include "bind_common.h"

PYBIND11_MODULE(_mmpt, m) {
  m.doc() = "mmpt native module (C++ engine); use it through the `mmpt` package";
  m.attr("__version__") = MMPT_VERSION;
  mmpt::python::RegisterErrors(m);
  mmpt::python::BindCore(m);
  mmpt::python::BindText(m);
  mmpt::python::BindMedia(m);
  mmpt::python::BindCost(m);
  mmpt::python::BindStore(m);
  mmpt::python::BindIngest(m);
  mmpt::python::BindCp(m);
  mmpt::python::BindReplica(m);  // the Batch class, which the loader hands out
  mmpt::python::BindLoad(m);
  mmpt::python::BindExchange(m);
  mmpt::python::BindSim(m);
}
