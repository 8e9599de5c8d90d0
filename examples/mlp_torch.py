#!/usr/bin/env python3
"""examples/mlp.c in PyTorch: the same model, data, optimizer, schedule and checkpoint.

    python3 examples/mlp_torch.py [DATA_DIR [TRAIN_IMAGES [EPOCHS [CHECKPOINT]]]]

Trains 784-256-10 with Adam (lr 1e-3) in shuffled batches of 64 for EPOCHS epochs
(default 3), StepLR(step_size=1, gamma=0.7); after every epoch measures the accuracy on
the 10,000 test images and saves model, optimizer and scheduler to CHECKPOINT (default
mlp.pt), resuming from it when it exists. docs/sdk.md sets the training loop between the
loop-begin and loop-end markers beside the C one, and ctest's
example_mlp_loop_is_at_most_2_5_times_pytorch counts both. Needs torch and numpy.
"""
import gzip
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    rank = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(shape)


def fashion_mnist(folder, split, limit):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"))
    if limit:
        images, labels = images[:limit], labels[:limit]
    # Fashion-MNIST's pixel mean and standard deviation, as examples/mlp.c.
    x = (torch.from_numpy(images.astype(np.float32)) / 255 - 0.2860) / 0.3530
    y = torch.from_numpy(labels.astype(np.int64))
    return torch.utils.data.TensorDataset(x.unsqueeze(1), y)


def main():
    args = sys.argv[1:]
    data = args[0] if len(args) > 0 else "/usr/share/datasets/fashion-mnist"
    limit = int(args[1]) if len(args) > 1 else 0
    epochs = int(args[2]) if len(args) > 2 else 3
    checkpoint = args[3] if len(args) > 3 else "mlp.pt"

    torch.manual_seed(1)
    train_set = fashion_mnist(data, "train", limit)
    test_set = fashion_mnist(data, "test", 0)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=True)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=1000)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    if os.path.exists(checkpoint):
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        print(f"resumed from {checkpoint} after epoch {scheduler.last_epoch}")

    # loop-begin
    for epoch in range(scheduler.last_epoch, epochs):
        model.train()
        total, correct = 0.0, 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            for x, y in test_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        print(f"epoch {epoch + 1}: train loss {total / len(train_loader):.4f}, "
              f"test accuracy {100 * correct / len(test_set):.2f}%, "
              f"lr {scheduler.get_last_lr()[0]:.6f}")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict()}, checkpoint)
    # loop-end

    # Eight test images: the predicted classes, then the true ones.
    x, y = next(iter(test_loader))
    with torch.no_grad():
        print(model(x[:8]).argmax(1))
    print(y[:8])


if __name__ == "__main__":
    main()
