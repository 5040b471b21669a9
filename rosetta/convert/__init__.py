"""Conversion paths, one module each, registered by (source format, target format); each writes an artifact
and a manifest into an atomically created folder."""
