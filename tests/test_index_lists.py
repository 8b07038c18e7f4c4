"""IVF lists filed by the criterion queries probe with: on the same clustered points, lifted to the hyperboloid
(Lorentz) or normalised (cosine), the list holding each query's exact nearest neighbour is among the lists the
query probes about as often for the one as for the other."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from benchbackcompat import geometry
from benchbackcompat.config import IndexConfig
from benchbackcompat.metrics import index as ix

faiss = pytest.importorskip("faiss", reason="the index option needs faiss (pip install 'benchbackcompat[faiss]')")
CONFIG = IndexConfig(nlist=32, nprobe=1, pq_m=4)


def clustered(n: int, gen: torch.Generator, centres: torch.Tensor) -> torch.Tensor:
    """Points around random centres (float64)."""
    which = torch.randint(len(centres), (n,), generator=gen)
    return centres[which] + 0.8 * torch.randn(n, centres.shape[1], generator=gen, dtype=torch.float64)


def probed_recall(index, query: np.ndarray, nearest: np.ndarray) -> float:
    """The share of queries whose exact nearest gallery item is filed in a list they probe, read from the index:
    its inverted lists (who is where) and its coarse quantiser (which lists a query visits)."""
    from faiss.contrib.inspect_tools import get_invlist

    owner = np.empty(index.ntotal, dtype=np.int64)
    for j in range(index.nlist):
        owner[get_invlist(index.invlists, j)[0]] = j
    padded = np.pad(query, ((0, 0), (0, index.d - query.shape[1]))).astype(np.float32)
    probed = index.quantizer.search(padded, index.nprobe)[1]
    return float((probed == owner[nearest][:, None]).any(1).mean())


def test_lorentz_lists_are_probed_as_the_cosine_ones():
    gen = torch.Generator().manual_seed(0)
    centres = 1.5 * torch.randn(40, 12, generator=gen, dtype=torch.float64)
    zq, zg = clustered(500, gen, centres), clustered(4000, gen, centres)
    # cosine: unit vectors, symmetric; nearest neighbour by the largest cosine
    uq, ug = (torch.nn.functional.normalize(z, dim=1) for z in (zq, zg))
    cosine = probed_recall(ix.build(ug, "ivf-pq", CONFIG, ug), uq.numpy(), (uq @ ug.T).argmax(1).numpy())
    # Lorentz: points on the hyperboloid (HBCT's lift, norms clipped to 1.5); nearest by the geodesic distance
    lq, lg = (geometry.lift(z.float(), 1.0, 1.5).double() for z in (zq, zg))
    nearest = geometry.pairwise_distance(lq, lg).argmin(1).numpy()
    flip = torch.tensor([-1.0] + [1.0] * 12, dtype=torch.float64)  # <q * flip, g> = <q, g>_L
    index = ix.build(lg, "ivf-pq", CONFIG, lg * flip)
    lorentz = probed_recall(index, (lq * flip).numpy(), nearest)
    assert cosine > 0.8  # one list of 32 probed: the test has lists to miss
    assert lorentz == pytest.approx(cosine, abs=0.03), (lorentz, cosine)
    # filed by the gallery's own coordinates, as queries never probe, the lists miss more nearest neighbours
    unfiled = probed_recall(ix.build(lg, "ivf-pq", CONFIG), (lq * flip).numpy(), nearest)
    assert unfiled < lorentz - 0.03, (unfiled, lorentz)
