"""revstudio-haar: invertible node types for revstudio, the example of docs/plugins.md.

``nodes`` declares the types (no torch there); ``haar`` and ``leaky`` hold the
torch modules they build. revstudio finds ``nodes.SPECS`` through the entry
point ``haar`` in the group ``revstudio.nodes`` (pyproject.toml).
"""

__version__ = "0.1.0"
