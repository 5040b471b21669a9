"""Faults injected on purpose, and what rosetta must make of each: the old output or the new one and never
half of one, the right verdict for the right cause (a converter's refusal, the machine failing, wrong
numbers), one line on stderr, and nothing left behind.

Each class of fault is made where it happens: signals at chosen points of an install (a hook on the step, or
a real SIGKILL in a process of its own), a full disk (a write that fails with ENOSPC, and RLIMIT_FSIZE in a
process of its own), memory (MemoryError, and RLIMIT_AS in a process of its own), a changed file in a kept
work folder, two runs into one output, bad settings and options. The models are tiny ONNX graphs run in ONNX
Runtime in this process: the suite tests rosetta's handling, not the frameworks."""
