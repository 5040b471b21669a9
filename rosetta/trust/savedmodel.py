"""What a TensorFlow SavedModel may run without --trust-code, checked on its parsed protobuf before TensorFlow
loads it.

A SavedModel is a program: loading it runs graph ops (resource and table initializers, the restore of its
variables), and its signatures run more. Every op it can run must be a pure tensor op from PURE_OPS: nothing
that reads or writes files, runs Python, prints, talks to other processes or builds a tf.data pipeline. Every
function is checked, whether the signatures, the object graph, an initializer or nothing reaches it.

The one exception is the saver, which reads and writes the model's own checkpoint: the main-graph nodes that
`saver_def` names (save_tensor_name, restore_op_name and what they depend on) and the functions reachable only
from them (TF2's `__inference__traced_save_*` / `__inference__traced_restore_*`) may also hold the checkpoint
ops, the save side SAVE_OPS and the restore side RESTORE_OPS, and each such op's path must be the checkpoint
prefix the loader feeds (saver_def.filename_tensor_name, passed down to the functions' arguments), optionally
joined with plain relative suffixes ("_temp/part", ".part"): never a path the model chooses itself.

Nothing here imports TensorFlow: the protobufs come parsed (rosetta.frameworks.tensorflow.check_saved_model),
and are read duck-typed (meta_graphs, graph_def.node, graph_def.library.function[*].node_def, signature_def,
saver_def, collection_def, object_graph_def).
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple

from rosetta.errors import UntrustedModel
from rosetta.trust import TRUST_HINT

PURE_OPS = frozenset({
    # elementwise math: arithmetic, comparisons, logic, bit operations, special functions, casts
    "Abs", "Acos", "Acosh", "Add", "AddN", "AddV2", "AccumulateNV2", "Angle", "ApproximateEqual", "Asin", "Asinh",
    "Atan", "Atan2", "Atanh", "BesselI0", "BesselI0e", "BesselI1", "BesselI1e", "BesselJ0", "BesselJ1", "BesselK0",
    "BesselK0e", "BesselK1", "BesselK1e", "BesselY0", "BesselY1", "Betainc", "BitwiseAnd", "BitwiseOr",
    "BitwiseXor", "Ceil", "ClipByValue", "Complex", "ComplexAbs", "Conj", "Cos", "Cosh", "Dawsn", "Digamma", "Div",
    "DivNoNan", "Equal", "Erf", "Erfc", "Erfinv", "Exp", "Expint", "Expm1", "Floor", "FloorDiv", "FloorMod",
    "FresnelCos", "FresnelSin", "Greater", "GreaterEqual", "Igamma", "IgammaGradA", "Igammac", "Imag", "Inv",
    "Invert", "IsFinite", "IsInf", "IsNan", "LeftShift", "Less", "LessEqual", "Lgamma", "Log", "Log1p",
    "LogicalAnd", "LogicalNot", "LogicalOr", "Maximum", "Minimum", "Mod", "Mul", "MulNoNan", "Ndtri", "Neg",
    "NextAfter", "NotEqual", "Polygamma", "PopulationCount", "Pow", "Real", "RealDiv", "Reciprocal", "RightShift",
    "Rint", "Round", "Rsqrt", "Select", "SelectV2", "Sign", "Sin", "Sinh", "Spence", "Sqrt", "Square",
    "SquaredDifference", "Sub", "Tan", "Tanh", "TruncateDiv", "TruncateMod", "Xdivy", "Xlog1py", "Xlogy", "Zeta",
    "Cast", "Bitcast",
    # gradients of the above and of NN ops (training graphs; Conv*BackpropInput is also a transposed convolution)
    "BiasAddGrad", "BroadcastGradientArgs", "EluGrad", "InvGrad", "LeakyReluGrad", "ReciprocalGrad", "Relu6Grad",
    "ReluGrad", "RsqrtGrad", "SeluGrad", "SigmoidGrad", "SoftplusGrad", "SoftsignGrad", "SqrtGrad", "TanhGrad",
    "Conv2DBackpropFilter", "Conv2DBackpropFilterV2", "Conv2DBackpropInput", "Conv2DBackpropInputV2",
    "Conv3DBackpropFilterV2", "Conv3DBackpropInputV2", "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput", "AvgPoolGrad", "AvgPool3DGrad", "MaxPoolGrad", "MaxPoolGradV2",
    "MaxPool3DGrad", "MaxPoolGradGrad", "MaxPoolGradGradV2", "MaxPoolGradWithArgmax", "FusedBatchNormGrad",
    "FusedBatchNormGradV2", "FusedBatchNormGradV3", "LRNGrad", "StridedSliceGrad", "TileGrad", "MirrorPadGrad",
    "ResizeBilinearGrad", "ResizeNearestNeighborGrad", "ResizeBicubicGrad",
    # reductions, scans, segments, sorting and searching
    "All", "Any", "ArgMax", "ArgMin", "Max", "Mean", "Min", "Prod", "Sum", "EuclideanNorm", "L2Loss", "Cumsum",
    "Cumprod", "CumulativeLogsumexp", "SegmentSum", "SegmentSumV2", "SegmentMean", "SegmentMax", "SegmentMaxV2",
    "SegmentMin", "SegmentMinV2", "SegmentProd", "SegmentProdV2", "UnsortedSegmentSum", "UnsortedSegmentMax",
    "UnsortedSegmentMin", "UnsortedSegmentProd", "SparseSegmentSum", "SparseSegmentSumWithNumSegments",
    "SparseSegmentMean", "SparseSegmentMeanWithNumSegments", "SparseSegmentSqrtN",
    "SparseSegmentSqrtNWithNumSegments", "TopK", "TopKV2", "ApproxTopK", "InTopK", "InTopKV2", "NthElement",
    "Bincount", "DenseBincount", "HistogramFixedWidth", "Bucketize", "LowerBound", "UpperBound",
    # array and shape: constants, placeholders, identities, reshaping, slicing, gathering, scattering, padding
    "Const", "HostConst", "Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "Identity", "IdentityN",
    "Snapshot", "StopGradient", "PreventGradient", "EnsureShape", "CheckNumerics", "CheckNumericsV2", "Assert",
    "NoOp", "ControlTrigger", "Shape", "ShapeN", "Size", "Rank", "Reshape", "Squeeze", "ExpandDims", "Transpose",
    "ConjugateTranspose", "Pack", "Unpack", "Concat", "ConcatV2", "ConcatOffset", "ParallelConcat", "Split",
    "SplitV", "Slice", "StridedSlice", "TensorStridedSliceUpdate", "Tile", "Pad", "PadV2", "MirrorPad", "Gather",
    "GatherV2", "GatherNd", "ScatterNd", "ScatterNdNonAliasingAdd", "TensorScatterUpdate", "TensorScatterAdd",
    "TensorScatterSub", "TensorScatterMax", "TensorScatterMin", "Fill", "ZerosLike", "OnesLike", "Range",
    "LinSpace", "BroadcastTo", "BroadcastArgs", "Reverse", "ReverseV2", "ReverseSequence", "Roll", "OneHot",
    "Where", "Unique", "UniqueV2", "UniqueWithCounts", "UniqueWithCountsV2", "InvertPermutation",
    "DynamicPartition", "DynamicStitch", "ParallelDynamicStitch", "MatrixBandPart", "MatrixDiag", "MatrixDiagV2",
    "MatrixDiagV3", "MatrixDiagPart", "MatrixDiagPartV2", "MatrixDiagPartV3", "MatrixSetDiag", "MatrixSetDiagV2",
    "MatrixSetDiagV3", "Diag", "DiagPart", "SpaceToDepth", "DepthToSpace", "SpaceToBatch", "SpaceToBatchND",
    "BatchToSpace", "BatchToSpaceND", "ExtractImagePatches", "ExtractVolumePatches", "DataFormatDimMap",
    "DataFormatVecPermute", "UnravelIndex", "ListDiff", "InplaceAdd", "InplaceSub", "InplaceUpdate",
    "GuaranteeConst", "Einsum", "Fingerprint",
    # sparse and ragged tensors
    "SparseToDense", "SparseReshape", "SparseSlice", "SparseConcat", "SparseAdd", "SparseReorder",
    "SparseTensorDenseMatMul", "SparseTensorDenseAdd", "SparseFillEmptyRows", "SparseReduceSum",
    "SparseReduceMax", "SparseSoftmax", "SparseDenseCwiseAdd", "SparseDenseCwiseMul", "SparseDenseCwiseDiv",
    "RaggedTensorToTensor", "RaggedTensorToSparse", "RaggedTensorToVariant", "RaggedTensorFromVariant",
    "RaggedRange", "RaggedGather", "CompositeTensorVariantFromComponents", "CompositeTensorVariantToComponents",
    # neural networks: convolution, pooling, normalisation, activations, resizing, quantisation, RNN cells
    "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "SparseMatMul", "BiasAdd", "BiasAddV1", "Conv",
    "Conv2D", "Conv3D", "DepthwiseConv2dNative", "Dilation2D", "AvgPool", "AvgPool3D", "MaxPool", "MaxPoolV2",
    "MaxPool3D", "MaxPoolWithArgmax", "FractionalMaxPool", "FractionalAvgPool", "FusedBatchNorm",
    "FusedBatchNormV2", "FusedBatchNormV3", "BatchNormWithGlobalNormalization", "LRN", "Relu", "Relu6", "Elu",
    "Selu", "LeakyRelu", "Softplus", "Softsign", "Sigmoid", "Softmax", "LogSoftmax",
    "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", "ResizeBilinear",
    "ResizeNearestNeighbor", "ResizeBicubic", "ResizeArea", "ScaleAndTranslate", "CropAndResize",
    "ImageProjectiveTransformV2", "ImageProjectiveTransformV3", "NonMaxSuppression", "NonMaxSuppressionV2",
    "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5", "NonMaxSuppressionWithOverlaps",
    "CombinedNonMaxSuppression", "RGBToHSV", "HSVToRGB", "AdjustContrastv2", "AdjustHue", "AdjustSaturation",
    "FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel",
    "QuantizeAndDequantizeV2", "QuantizeAndDequantizeV3", "QuantizeAndDequantizeV4", "QuantizeV2", "Dequantize",
    "CTCGreedyDecoder", "CTCBeamSearchDecoder", "CTCLoss", "CTCLossV2", "BlockLSTM", "BlockLSTMV2",
    "LSTMBlockCell", "GRUBlockCell", "CudnnRNN", "CudnnRNNV2", "CudnnRNNV3", "CudnnRNNParamsSize",
    "CudnnRNNCanonicalToParams", "CudnnRNNCanonicalToParamsV2", "CudnnRNNParamsToCanonical",
    "CudnnRNNParamsToCanonicalV2",
    # linear algebra and Fourier transforms
    "MatrixInverse", "MatrixDeterminant", "LogMatrixDeterminant", "Cholesky", "Qr", "Svd", "SelfAdjointEigV2",
    "Eig", "MatrixSolve", "MatrixSolveLs", "MatrixTriangularSolve", "BandedTriangularSolve", "MatrixExponential",
    "MatrixLogarithm", "MatrixSquareRoot", "Lu", "TridiagonalSolve", "TridiagonalMatMul", "Cross", "FFT", "IFFT",
    "FFT2D", "IFFT2D", "FFT3D", "IFFT3D", "FFTND", "IFFTND", "RFFT", "IRFFT", "RFFT2D", "IRFFT2D", "RFFT3D",
    "IRFFT3D", "RFFTND", "IRFFTND",
    # control flow: functional (calls, conditionals, loops; their functions are checked too) and TF1 dataflow
    "If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase", "For", "PartitionedCall",
    "StatefulPartitionedCall", "Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "RefSwitch",
    "RefMerge", "RefEnter", "RefExit", "RefNextIteration", "RefIdentity", "RefSelect",
    # variables and resources: TF2 resource variables and TF1 reference variables, in memory only
    "VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
    "VarIsInitializedOp", "VariableShape", "DestroyResourceOp", "DisableCopyOnRead", "ResourceGather",
    "ResourceGatherNd", "ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul", "ResourceScatterDiv",
    "ResourceScatterMin", "ResourceScatterMax", "ResourceScatterUpdate", "ResourceScatterNdAdd",
    "ResourceScatterNdSub", "ResourceScatterNdUpdate", "ResourceScatterNdMax", "ResourceScatterNdMin",
    "ResourceStridedSliceAssign", "Variable", "VariableV2", "Assign", "AssignAdd", "AssignSub",
    "IsVariableInitialized", "TemporaryVariable", "DestroyTemporaryVariable", "ScatterUpdate", "ScatterAdd",
    "ScatterSub", "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub",
    # lookup tables, initialised from tensors (tables read from text files are refused: they read files)
    "HashTable", "HashTableV2", "MutableHashTableV2", "MutableHashTableOfTensorsV2", "MutableDenseHashTableV2",
    "AnonymousHashTable", "AnonymousMutableHashTable", "AnonymousMutableHashTableOfTensors",
    "AnonymousMutableDenseHashTable", "InitializeTable", "InitializeTableV2", "LookupTableFind",
    "LookupTableFindV2", "LookupTableImport", "LookupTableImportV2", "LookupTableInsert", "LookupTableInsertV2",
    "LookupTableRemoveV2", "LookupTableSize", "LookupTableSizeV2", "LookupTableExport", "LookupTableExportV2",
    # random numbers: stateless (seeded by tensors) and stateful (seeded by attributes or a generator variable)
    "RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal", "ParameterizedTruncatedNormal",
    "RandomShuffle", "RandomGamma", "RandomPoisson", "RandomPoissonV2", "Multinomial", "RandomIndexShuffle",
    "StatelessRandomUniform", "StatelessRandomUniformV2", "StatelessRandomNormal", "StatelessRandomNormalV2",
    "StatelessTruncatedNormal", "StatelessTruncatedNormalV2", "StatelessRandomUniformInt",
    "StatelessRandomUniformIntV2", "StatelessRandomUniformFullInt", "StatelessRandomUniformFullIntV2",
    "StatelessMultinomial", "StatelessRandomGetKeyCounter", "StatelessRandomGetAlg",
    "StatelessRandomGetKeyCounterAlg", "StatelessRandomBinomial", "StatelessRandomGammaV2",
    "StatelessRandomGammaV3", "StatelessRandomPoisson", "StatelessParameterizedTruncatedNormal",
    "StatelessShuffle", "StatefulUniform", "StatefulUniformInt", "StatefulUniformFullInt",
    "StatefulStandardNormalV2", "StatefulTruncatedNormal", "StatefulRandomBinomial", "RngSkip", "RngReadAndSkip",
    # tensor lists, arrays, maps and stacks (the state of RNN loops) and optionals
    "EmptyTensorList", "TensorListConcat", "TensorListConcatLists", "TensorListConcatV2", "TensorListElementShape",
    "TensorListFromTensor", "TensorListGather", "TensorListGetItem", "TensorListLength", "TensorListPopBack",
    "TensorListPushBack", "TensorListPushBackBatch", "TensorListReserve", "TensorListResize", "TensorListScatter",
    "TensorListScatterIntoExistingList", "TensorListScatterV2", "TensorListSetItem", "TensorListSplit",
    "TensorListStack", "TensorArrayV3", "TensorArrayReadV3", "TensorArrayWriteV3", "TensorArrayGatherV3",
    "TensorArrayScatterV3", "TensorArrayConcatV3", "TensorArraySplitV3", "TensorArraySizeV3",
    "TensorArrayCloseV3", "TensorArrayGradV3", "TensorArrayGradWithShape", "EmptyTensorMap", "TensorMapInsert",
    "TensorMapLookup", "TensorMapErase", "TensorMapHasKey", "TensorMapSize", "TensorMapStackKeys", "StackV2",
    "StackPushV2", "StackPopV2", "StackCloseV2", "OptionalFromValue", "OptionalGetValue", "OptionalHasValue",
    "OptionalNone",
    # strings, and parsing or decoding of tensors given as bytes (never of files)
    "AsString", "StringJoin", "StringLength", "StringLower", "StringUpper", "StringStrip", "StringSplit",
    "StringSplitV2", "StringToNumber", "StringToHashBucket", "StringToHashBucketFast", "StringToHashBucketStrong",
    "Substr", "RegexFullMatch", "StaticRegexFullMatch", "RegexReplace", "StaticRegexReplace", "ReduceJoin",
    "StringFormat", "StringNGrams", "UnicodeDecode", "UnicodeDecodeWithOffsets", "UnicodeEncode", "UnicodeScript",
    "UnicodeTranscode", "DecodeBase64", "EncodeBase64", "ParseExample", "ParseExampleV2", "ParseSingleExample",
    "ParseSequenceExample", "ParseSequenceExampleV2", "ParseSingleSequenceExample", "ParseTensor",
    "SerializeTensor", "DecodeRaw", "DecodePaddedRaw", "DecodeCSV", "DecodeJSONExample", "DecodeJpeg",
    "DecodeAndCropJpeg", "DecodePng", "DecodeBmp", "DecodeGif", "DecodeImage", "DecodeWebP", "ExtractJpegShape",
    "EncodeJpeg", "EncodePng",
})

# The saver's own checkpoint I/O, allowed only in the nodes and functions that saver_def names.
SAVE_OPS = frozenset({"SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints", "ShardedFilename", "ShardedFilespec"})
RESTORE_OPS = frozenset({"RestoreV2", "Restore", "RestoreSlice", "ShardedFilename", "ShardedFilespec"})
# where each checkpoint op takes a path: the data inputs that must be the loader's checkpoint prefix
CHECKPOINT_PATHS = {"SaveV2": (0,), "Save": (0,), "SaveSlices": (0,), "MergeV2Checkpoints": (0, 1),
                    "RestoreV2": (0,), "Restore": (0,), "RestoreSlice": (0,)}

# What refused ops do, for the message (ops in none of these are simply not on the list).
PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc", "EagerPyFuncV2"})
FILE_OPS = frozenset({
    "ReadFile", "WriteFile", "MatchingFiles", "ImmutableConst", "InitializeTableFromTextFile",
    "InitializeTableFromTextFileV2", "DumpTensor", "DebugIdentityV2", "DebugIdentityV3", "DecodeProtoV2",
    "EncodeProto", "CalibrationStatisticsSaver", "FileSystemSetConfiguration", "LoadAndRemapMatrix",
    "GenerateVocabRemapping", "RecordInput", "DTensorRestoreV2", "DistributedSave", "DebugIdentity",
    "DebugNanCount", "DebugNumericSummary", "LoadDataset", "IdentityReader", "IdentityReaderV2",
    # summary writers (event files or databases)
    "SummaryWriter", "CreateSummaryFileWriter", "CreateSummaryDbWriter", "WriteSummary", "WriteScalarSummary",
    "WriteHistogramSummary", "WriteImageSummary", "WriteAudioSummary", "WriteGraphSummary",
    "WriteRawProtoSummary", "FlushSummaryWriter", "CloseSummaryWriter", "ImportEvent",
    "StatsAggregatorSetSummaryWriter",
    # tf.data sources and sinks that name files (every other dataset op is refused as a pipeline)
    "TextLineDataset", "TFRecordDataset", "TFRecordDatasetV2", "FixedLengthRecordDataset",
    "FixedLengthRecordDatasetV2", "CSVDataset", "CSVDatasetV2", "ExperimentalCSVDataset", "MatchingFilesDataset",
    "ExperimentalMatchingFilesDataset", "LMDBDataset", "ExperimentalLMDBDataset", "SqlDataset",
    "ExperimentalSqlDataset", "SaveDataset", "SaveDatasetV2", "SnapshotDataset",
    "SnapshotDatasetV2", "SnapshotDatasetReader", "SnapshotNestedDatasetReader", "SnapshotChunkDataset",
    "ListSnapshotChunksDataset", "CacheDataset", "CacheDatasetV2", "DatasetToTFRecord",
    "ExperimentalDatasetToTFRecord",
}) | SAVE_OPS | RESTORE_OPS
PRINT_OPS = frozenset({"Print", "PrintV2"})
NETWORK_OPS = frozenset({"RemoteCall", "Send", "Recv", "_Send", "_Recv", "_HostSend", "_HostRecv"})
_FAMILIES = (  # (test, what the op does); a refusal names an op of the first family found
    (lambda op: op in PYTHON_OPS, "runs Python code when the model runs"),
    (lambda op: op in FILE_OPS or op.endswith(("Reader", "ReaderV2")) or op.startswith("Reader"),
     "reads or writes files when the model runs"),
    (lambda op: op in PRINT_OPS, "prints to the log or to a file when the model runs"),
    (lambda op: op in NETWORK_OPS or op.startswith(("Rpc", "Collective", "Nccl", "_Nccl", "DataService")),
     "talks to other processes or machines when the model runs"),
    (lambda op: "Dataset" in op or "Iterator" in op,
     "builds a tf.data pipeline when the model runs, which can read files and run functions of its own"),
)
UNLISTED = "is not on rosetta's list of pure tensor ops"

STRICT, SAVE, RESTORE = "strict", "save", "restore"
_ALLOWED = {SAVE: PURE_OPS | SAVE_OPS, RESTORE: PURE_OPS | RESTORE_OPS}
_CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
ANCHORED, SUFFIX, ELSEWHERE = "anchored", "suffix", "elsewhere"  # what a checkpoint path is built from


class Refusal(NamedTuple):
    op: str
    where: str  # the function or main-graph node that holds it
    in_function: bool
    what: str  # what the op does, for the message


def refused_ops(saved_model) -> list[tuple[str, str]]:
    """(op, function or node name) for every op of `saved_model` (a SavedModel protobuf) outside the policy."""
    return [(refusal.op, refusal.where) for refusal in refusals(saved_model)]


def check_saved_model_proto(saved_model, label: str, trust_code: bool) -> None:
    """Refuse, with one line naming the first op outside the policy, unless `trust_code`."""
    if trust_code:
        return
    for refusal in refusals(saved_model):
        where = f"in function {refusal.where}" if refusal.in_function else f"node {refusal.where}"
        raise UntrustedModel(f"{label} holds op {refusal.op} ({where}), which {refusal.what}; {TRUST_HINT}")


def refusals(saved_model) -> list[Refusal]:
    """Every op outside the policy, once per (op, where), the most telling family first (see _FAMILIES)."""
    found: dict[tuple[str, str], Refusal] = {}
    for meta_graph in saved_model.meta_graphs:
        for refusal in _MetaGraph(meta_graph).refusals():
            found.setdefault((refusal.op, refusal.where), refusal)
    return sorted(found.values(), key=lambda refusal: _family(refusal.op))


def what_it_does(op: str) -> str:
    family = _family(op)
    return _FAMILIES[family][1] if family < len(_FAMILIES) else UNLISTED


def _family(op: str) -> int:
    return next((index for index, (test, _) in enumerate(_FAMILIES) if test(op)), len(_FAMILIES))


def _allowed(contexts: set) -> frozenset:
    if not contexts or STRICT in contexts:
        return PURE_OPS
    allowed = None
    for context in contexts:
        allowed = _ALLOWED[context] if allowed is None else allowed & _ALLOWED[context]
    return allowed


def _node_of(reference: str) -> str:
    """The node a main-graph input or a tensor name refers to: '^name', 'name', 'name:1' -> 'name'."""
    return reference.lstrip("^").split(":")[0]


def _functions_in(value) -> Iterator[str]:
    """Names of the functions an AttrValue refers to (func, list of func, and inside their own attrs)."""
    kind = value.WhichOneof("value")
    calls = [value.func] if kind == "func" else list(value.list.func) if kind == "list" else []
    for call in calls:
        yield call.name
        for inner in call.attr.values():
            yield from _functions_in(inner)


def _tensor_names(info) -> Iterator[str]:
    """The tensor names a signature's TensorInfo refers to (dense, sparse or composite)."""
    kind = info.WhichOneof("encoding")
    if kind == "name":
        yield info.name
    elif kind == "coo_sparse":
        yield from (info.coo_sparse.values_tensor_name, info.coo_sparse.indices_tensor_name,
                    info.coo_sparse.dense_shape_tensor_name)
    elif kind == "composite_tensor":
        for component in info.composite_tensor.components:
            yield from _tensor_names(component)


def _safe_suffix(text) -> bool:
    """A string a checkpoint path may append to the loader's prefix: relative, no `..`, no scheme."""
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return not text.startswith(("/", "~")) and "\\" not in text and ":" not in text and "\0" not in text and \
        ".." not in text.split("/")


class _MetaGraph:
    """One MetaGraphDef: which context each main-graph node and function runs in, and what it holds."""

    def __init__(self, meta_graph) -> None:
        graph = meta_graph.graph_def
        self.graph_nodes, self.library = list(graph.node), list(graph.library.function)
        self.nodes = {node.name: node for node in self.graph_nodes}
        self.functions = {function.signature.name: function for function in self.library}
        self.definitions: dict[str, list] = {}  # a name defined twice is checked in both (TensorFlow refuses it)
        for function in self.library:
            self.definitions.setdefault(function.signature.name, []).append(function)
        saver = meta_graph.saver_def if meta_graph.HasField("saver_def") else None
        self.filename_node = _node_of(saver.filename_tensor_name) if saver and saver.filename_tensor_name else ""
        save = self._closure([saver.save_tensor_name] if saver and saver.save_tensor_name else [])
        restore = self._closure([saver.restore_op_name] if saver and saver.restore_op_name else [])
        strict = self._closure(self._strict_roots(meta_graph))
        self.node_contexts = {}
        for name in self.nodes:
            contexts = {SAVE} if name in save else set()
            contexts |= {RESTORE} if name in restore else set()
            if not contexts or name in strict:
                contexts.add(STRICT)
            self.node_contexts[name] = contexts
        self.function_contexts = self._function_contexts(meta_graph)
        self._arguments: dict[str, list[str]] = {}  # memo: each saver function's arguments' path kinds
        self._bodies: dict[int, dict] = {}  # memo: each function's nodes by name

    # --- contexts ------------------------------------------------------------------------------------------

    def _strict_roots(self, meta_graph) -> list[str]:
        """Main-graph tensors and ops that run outside the saver: signatures (init ops included), collections'
        nodes, assets, the object graph's constants."""
        roots = []
        for signature in meta_graph.signature_def.values():
            for infos in (signature.inputs, signature.outputs):
                for info in infos.values():
                    roots.extend(_tensor_names(info))
        for collection in meta_graph.collection_def.values():
            if collection.WhichOneof("kind") == "node_list":
                roots.extend(collection.node_list.value)
        for asset in meta_graph.asset_file_def:
            roots.extend(_tensor_names(asset.tensor_info))
        if meta_graph.HasField("object_graph_def"):
            for node in meta_graph.object_graph_def.nodes:
                if node.WhichOneof("kind") == "constant":
                    roots.append(node.constant.operation)
        return roots

    def _closure(self, roots: Iterable[str]) -> set[str]:
        """The main-graph nodes `roots` (tensor or op names) depend on, control dependencies included."""
        seen, stack = set(), [_node_of(root) for root in roots if root]
        while stack:
            name = stack.pop()
            if name in seen or name not in self.nodes:
                continue
            seen.add(name)
            stack.extend(_node_of(i) for i in self.nodes[name].input)
        return seen

    def _called(self, node) -> list[str]:
        """Library functions a node refers to: by any func attr, or as its op (a direct function call)."""
        names = [node.op] if node.op in self.functions else []
        for value in node.attr.values():
            names.extend(_functions_in(value))
        return [name for name in names if name in self.functions]

    def _function_contexts(self, meta_graph) -> dict[str, set]:
        contexts: dict[str, set] = {name: set() for name in self.functions}
        work = []
        for name, node in self.nodes.items():
            for function in self._called(node):
                work.append((function, self.node_contexts[name]))
        if meta_graph.HasField("object_graph_def"):
            objects = meta_graph.object_graph_def
            names = list(objects.concrete_functions.keys())
            for node in objects.nodes:
                kind = node.WhichOneof("kind")
                if kind == "function":
                    names.extend(node.function.concrete_functions)
                elif kind == "bare_concrete_function":
                    names.append(node.bare_concrete_function.concrete_function_name)
            work.extend((name, {STRICT}) for name in names if name in self.functions)
        while work:
            function, new = work.pop()
            if new <= contexts[function]:
                continue
            contexts[function] |= new
            for definition in self.definitions[function]:
                for node in definition.node_def:
                    work.extend((called, set(contexts[function])) for called in self._called(node))
        for function, found in contexts.items():
            if not found:  # reached from nowhere rosetta knows: checked like the rest
                found.add(STRICT)
        return contexts

    # --- the check -----------------------------------------------------------------------------------------

    def refusals(self) -> Iterator[Refusal]:
        for node in self.graph_nodes:
            yield from self._check(node, self.node_contexts[node.name], None, node.name, False)
        for function in self.library:
            name = function.signature.name
            for node in function.node_def:
                yield from self._check(node, self.function_contexts[name], function, name, True)

    def _check(self, node, contexts: set, function, where: str, in_function: bool) -> Iterator[Refusal]:
        op = node.op
        if op in self.functions and what_it_does(op) == UNLISTED:  # a call of a library function,
            return  # checked itself (TensorFlow refuses functions named like an op; the families are refused anyway)
        if op not in _allowed(contexts):
            yield Refusal(op, where, in_function, what_it_does(op))
        elif op in CHECKPOINT_PATHS:
            inputs = [i for i in node.input if not i.startswith("^")]
            for index in CHECKPOINT_PATHS[op]:
                if index < len(inputs) and self._path(function, inputs[index], set()) != ANCHORED:
                    yield Refusal(op, where, in_function, "reads or writes checkpoint files at a path of the "
                                                          "model's own choosing, not the loader's")
                    return

    # --- checkpoint paths ----------------------------------------------------------------------------------

    def _path(self, function, reference: str, visiting: set) -> str:
        """What a string tensor in the saver is built from: the loader's checkpoint prefix (ANCHORED), plain
        relative suffixes only (SUFFIX), or anything else (ELSEWHERE)."""
        if function is None:
            nodes, name = self.nodes, _node_of(reference)
            if name == self.filename_node:
                return ANCHORED
        else:
            nodes, name = self._body(function), reference.lstrip("^").split(":")[0]
            if ":" not in reference:  # a function argument
                arguments = [a.name for a in function.signature.input_arg]
                if name not in arguments:
                    return ELSEWHERE
                return self._argument_paths(function.signature.name)[arguments.index(name)]
        key = (id(function), name)
        if name not in nodes or key in visiting:
            return ELSEWHERE
        visiting = visiting | {key}
        node = nodes[name]
        inputs = [i for i in node.input if not i.startswith("^")]

        def path(index: int) -> str:
            return self._path(function, inputs[index], visiting) if index < len(inputs) else ELSEWHERE

        op = node.op
        if op == "Const":
            tensor = node.attr["value"].tensor
            values = list(tensor.string_val)
            return SUFFIX if values and all(_safe_suffix(v) for v in values) else ELSEWHERE
        if op in ("Identity", "PlaceholderWithDefault", "ShardedFilename", "ShardedFilespec"):
            return path(0)
        if op in ("Select", "SelectV2"):
            kinds = {path(1), path(2)}
            return kinds.pop() if len(kinds) == 1 else ELSEWHERE
        if op == "StringJoin":
            if not _safe_suffix(node.attr["separator"].s) or not inputs:
                return ELSEWHERE
            kinds = [path(i) for i in range(len(inputs))]
            if ELSEWHERE in kinds or ANCHORED in kinds[1:]:
                return ELSEWHERE
            return kinds[0]
        if op == "Pack":
            kinds = {path(i) for i in range(len(inputs))}
            return ANCHORED if kinds == {ANCHORED} else ELSEWHERE
        return ELSEWHERE

    def _body(self, function) -> dict:
        if id(function) not in self._bodies:
            self._bodies[id(function)] = {node.name: node for node in function.node_def}
        return self._bodies[id(function)]

    def _argument_paths(self, name: str) -> list[str]:
        """For each argument of saver function `name`: the path kind every call of it passes (ELSEWHERE where
        the calls disagree, or the function is called otherwise than by a plain call)."""
        if name in self._arguments:
            return self._arguments[name]
        signature = self.functions[name].signature
        count = len(signature.input_arg)
        self._arguments[name] = [ELSEWHERE] * count  # while being worked out (a function calling itself)
        if len(self.definitions[name]) > 1 or any(a.number_attr or a.type_list_attr for a in signature.input_arg):
            return self._arguments[name]
        kinds: list[set] = [set() for _ in range(count)]
        for caller, node in self._call_sites(name):
            inputs = [i for i in node.input if not i.startswith("^")]
            if node.op not in _CALL_OPS and node.op != name or len(inputs) != count:
                return self._arguments[name]
            for index, reference in enumerate(inputs):
                kinds[index].add(self._path(caller, reference, set()))
        self._arguments[name] = [k.pop() if len(k) == 1 else ELSEWHERE for k in kinds]
        return self._arguments[name]

    def _call_sites(self, name: str) -> Iterator[tuple[object, object]]:
        for node in self.graph_nodes:
            if name in self._called(node):
                yield None, node
        for function in self.library:
            for node in function.node_def:
                if name in self._called(node):
                    yield function, node
