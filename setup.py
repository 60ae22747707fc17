"""`pip install .`: CMake builds the extension mmpt._mmpt in build/pip and installs, into the
wheel, what `cmake --install` installs for Python: the package mmpt with the extension inside it
(component `python`) and mmpt's data, presets and default tokenizer, at mmpt/share/mmpt
(component `data`), where the extension finds it (src/mmpt/core/data_dir.h)."""

import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The checkout, also when this file is reached through a link (the doc test's folder standing
# for the checkout): build/pip is then the checkout's, built once and reused.
ROOT = os.path.dirname(os.path.realpath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.join(ROOT, "build", "pip")
        prefix = os.path.abspath(self.build_lib)
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release", "-DMMPT_PYTHON=ON", "-DMMPT_BENCH=OFF",
                        f"-DPython_EXECUTABLE={sys.executable}",
                        "-DMMPT_INSTALL_PYTHONDIR=.", "-DMMPT_INSTALL_DATADIR=mmpt/share/mmpt"],
                       check=True)
        subprocess.run(["cmake", "--build", build_dir, "--target", "_mmpt"], check=True)
        for component in ("python", "data"):
            subprocess.run(["cmake", "--install", build_dir, "--component", component,
                            "--prefix", prefix], check=True)


# The package's files come from `cmake --install` above, so setuptools collects none itself.
setup(packages=[], ext_modules=[Extension("mmpt._mmpt", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
