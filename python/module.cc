// The `_mmpt` extension module: one Bind* call per mmpt module that is built (python/CMakeLists.txt
// defines MMPT_BIND_<MODULE> for each). The package python/mmpt re-exports it.

#include "bind_common.h"

PYBIND11_MODULE(_mmpt, m) {
  m.doc() = "mmpt native module (C++ engine); use it through the `mmpt` package";
  m.attr("__version__") = MMPT_VERSION;
  mmpt::python::RegisterErrors(m);
  mmpt::python::BindCore(m);
#ifdef MMPT_BIND_TEXT
  mmpt::python::BindText(m);
#endif
#ifdef MMPT_BIND_MEDIA
  mmpt::python::BindMedia(m);
#endif
#ifdef MMPT_BIND_COST
  mmpt::python::BindCost(m);
#endif
#ifdef MMPT_BIND_STORE
  mmpt::python::BindStore(m);
#endif
#ifdef MMPT_BIND_CP
  mmpt::python::BindCp(m);
#endif
#ifdef MMPT_BIND_LOAD
  mmpt::python::BindLoad(m);
#endif
#ifdef MMPT_BIND_SIM
  mmpt::python::BindSim(m);
#endif
}
