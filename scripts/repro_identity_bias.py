"""Reproduces issue 45's torch-target CANNOTs (items 4c and 4d: KeyError 'stages.0.blocks.1.mlp.fc1.bias',
'...conv_dw.bias', '...rel_embeddings.weight'): torch.onnx.export merges identical initializers (here two zero
biases, as timm and transformers initialise them) and feeds the second reader through an Identity node;
onnx2torch's Conv (and Gemm) converters then look the Identity's output up among the initializers and raise
KeyError. Exits 1 while the torch target is CANNOT for it, 0 once it PASSes. It now PASSes: the torch target's
rewrites give each such Identity an initializer of its own (rewrites.identity_of_initializers_as_initializers;
tests/convert/test_onnx_to_torch.py converts a module of zero-bias Convs and Linears to PASS).

    python scripts/repro_identity_bias.py"""

from __future__ import annotations

import sys

import torch

import rosetta


class TwoZeroBiasConvs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.first, self.second = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(4, 4, 3, padding=1)
        for conv in (self.first, self.second):
            torch.nn.init.zeros_(conv.bias)

    def forward(self, x):
        return self.second(self.first(x).relu())


def main() -> int:
    conversion = rosetta.convert(TwoZeroBiasConvs().eval(), "onnx,torch", inputs=["x:Nx3x8x8:float32"], batch=2)
    rows = {row.target: row for row in conversion.report}
    for target, row in rows.items():
        print(f"{target}: {row.verdict} {row.reason}")
    return 0 if rows["torch"].verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
