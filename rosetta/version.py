"""rosetta's version, in a module of its own at the foundation: what manifests, stores and result files record,
read by every layer without climbing to the package's public face (rosetta/__init__.py re-exports it)."""

__version__ = "0.1.0"
