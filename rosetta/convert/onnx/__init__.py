"""The ONNX route: ONNX is the hub. One module per conversion path into ONNX (`from_torch`, `from_tensorflow`,
`from_keras`, `from_mxnet`) and out of it (`to_torch`, `to_tensorflow`, `to_keras`, `to_mxnet`), each with a
`convert` function registered in rosetta.convert.registry, and the graph rewrites some targets need
(`rewrites`). Helpers over ONNX files that runners and readers share too are in rosetta.frameworks.onnx_graph."""
