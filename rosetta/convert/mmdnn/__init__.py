"""The MMdnn route: models through MMdnn's intermediate representation (IR) into each framework.

MMdnn 0.3.1 (microsoft/MMdnn, archived 2020) parses a source model into its IR (a protobuf graph, NHWC
shapes, plus a NumPy weight dict), generates Python code for a target framework from the IR, and runs that
code to build the target model. rosetta calls its parsers and emitters through their Python classes:
`to_ir` (torch, mxnet, keras -> IR) and `from_ir` (IR -> torch, tensorflow, keras, mxnet, onnx).
Everything MMdnn needs to run on a 2026 stack is in `compat`, applied only in the worker processes that run
these conversions (every MMdnn path is registered isolated).
"""
