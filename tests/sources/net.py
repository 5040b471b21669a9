"""A user's PyTorch model as `net.py:build`: conv + batch-norm + dense, seeded."""

import torch


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, image):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(image))), 2)
        return self.fc(x.flatten(1))


def build(seed: int = 0):
    torch.manual_seed(seed)
    net = Net()
    with torch.no_grad():  # non-trivial running statistics, so a BatchNorm mistake shows
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 1.5)
    return net


def build_other():
    return build(seed=1)
