"""autotriton-jupyter: verified Triton kernels from PyTorch modules, in Jupyter and on the command line.

Importing the package is cheap: torch, triton and Jupyter are imported only by the
modules that need them.
"""

__version__ = "0.1.0"


def load_kernel(name: str, path: str | None = None):
    """The ModelNew class of a kernel accepted into the library (see `autotriton kernels list`)."""
    from .store import load_kernel as _load

    return _load(name, path)


def load_ipython_extension(ipython) -> None:
    """`%load_ext autotriton_jupyter`: registers %%autotriton and %autotriton."""
    from .magic import AutotritonMagics

    ipython.register_magics(AutotritonMagics)
