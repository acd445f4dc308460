"""autotriton-jupyter: verified Triton kernels from PyTorch modules, in Jupyter and on the command line.

Importing the package is cheap: torch, triton and Jupyter are imported only by the
modules that need them.
"""

__version__ = "0.1.0"
