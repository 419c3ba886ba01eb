"""string-pe: Learning the RoPEs: Better 2D and 3D Position Encodings with STRING (ICML 2025)."""

__version__ = "0.1.0"
