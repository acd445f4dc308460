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
    from .magic import AutotritonMagics, start_verifier

    ipython.register_magics(AutotritonMagics)
    start_verifier()


def kernel_state() -> str:
    """The kernel's state for the JupyterLab panel, a JSON string (see magic.kernel_state)."""
    from .magic import kernel_state as _state

    return _state()


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """jupyter_server finds the REST handlers of the side panel here."""
    return [{"module": "autotriton_jupyter.server"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """JupyterLab finds the built side panel (autotriton_jupyter/labextension) here."""
    return [{"src": "labextension", "dest": "autotriton-jupyter"}]
