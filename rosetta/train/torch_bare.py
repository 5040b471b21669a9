"""A hand-written PyTorch training loop of a reference model, with no rosetta code between its clock reads:
what rosetta.bench.run times the harness against to measure the harness's overhead."""

from __future__ import annotations

import time


def bare_torch_loop(model: str, batches: list, warmup: int, threads: int = 0, device: str = "cpu") -> dict:
    """A hand-written PyTorch training loop on `device`, float32 as the harness runs it (TF32 off), each batch
    copied to the device in its step as the harness does, the device synchronised where the clock is read: no
    rosetta code between its clock reads. {"s_per_step", "device": where its weights were, read back}."""
    import torch
    import torch.nn.functional as F

    from rosetta.frameworks.torch import module_device, set_precision, torch_device
    from rosetta.models import get_model

    if threads:
        torch.set_num_threads(threads)
    where = torch_device(device)
    set_precision("fp32")
    spec = get_model(model)
    net = spec.build(0).train().to(where)
    for layer in net.modules():
        if isinstance(layer, torch.nn.Dropout):
            layer.p = 0.0
    settings = spec.training.optimizer_settings
    if spec.training.optimizer == "sgd":
        optimizer = torch.optim.SGD(net.parameters(), lr=settings["lr"], momentum=settings["momentum"])
    else:
        optimizer = torch.optim.Adam(net.parameters(), lr=settings["lr"], betas=settings["betas"], eps=settings["eps"])
    loss_fn = F.cross_entropy if spec.training.loss == "cross_entropy" else F.mse_loss
    data = [(torch.from_numpy(next(iter(x.values()))), torch.from_numpy(y)) for x, y in batches]
    synchronize = torch.cuda.synchronize if where.type == "cuda" else (lambda: None)
    start = 0.0
    for index, (x, y) in enumerate(data):
        if index == warmup:
            synchronize()
            start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss_fn(net(x.to(where)), y.to(where)).backward()
        optimizer.step()
    synchronize()
    return {"s_per_step": (time.perf_counter() - start) / (len(data) - warmup), "device": module_device(net, where)}
