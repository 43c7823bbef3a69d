"""A plain torch Dataset over IDX files (MNIST's format), gzipped or not."""
import gzip
import os

import numpy as np
import torch
from torch.utils.data import Dataset


def _read_idx(folder, name):
    for candidate in (name, name + ".gz"):
        path = os.path.join(folder, candidate)
        if os.path.exists(path):
            opener = gzip.open if candidate.endswith(".gz") else open
            with opener(path, "rb") as f:
                data = f.read()
            ndim = data[3]
            shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
            return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)
    raise FileNotFoundError("Fashion-MNIST: %s not found in %s (nor %s.gz)" % (name, folder, name))


class IdxDataset(Dataset):
    """split: "train" or "t10k"; limit > 0 keeps the first `limit` samples."""

    def __init__(self, folder, split, limit=0):
        images = _read_idx(folder, "%s-images-idx3-ubyte" % split)
        labels = _read_idx(folder, "%s-labels-idx1-ubyte" % split)
        if limit:
            images, labels = images[:limit], labels[:limit]
        x = torch.from_numpy(images.copy()).float().div_(255.0).sub_(0.2860).div_(0.3530)
        self.images = x.unsqueeze(1)
        self.labels = torch.from_numpy(labels.astype(np.int64))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]
