"""Users' own model files. Each format's reader turns a file into a rosetta artifact folder (the file, copied,
plus a manifest with its signature), so conversions, runners and verification treat a user's model exactly
like a converted one. A PyTorch factory (`file.py:build`) is code, not a file: it becomes a module in memory.

Nothing here unpickles or runs code from a user's file unless the user passes --trust-code (see `loading`).
"""
