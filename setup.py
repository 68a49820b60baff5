"""Build of the Cython core.  Package metadata lives in pyproject.toml."""
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

CORE = Path("rocesim") / "_core"

extensions = [
    Extension(
        f"rocesim._core.{pyx.stem}",
        [str(pyx)],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
    )
    for pyx in sorted(CORE.glob("*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": 3, "boundscheck": False, "wraparound": False,
                             "cdivision": True, "initializedcheck": False},
    ),
)
