"""Run in a spawned process by the cache tests: pretrain after a barrier, report what happened."""

import time

import torch


def pretrain_after_barrier(barrier, queue, x, directory, settings):
    from pyromodels.nn import pretrain_autoencoder

    torch.set_num_threads(1)
    barrier.wait()
    start = time.time()
    ae = pretrain_autoencoder(torch.as_tensor(x), cache=directory, **settings)
    queue.put({"from_cache": ae.pretraining.from_cache, "start": start, "end": time.time(),
               "state": {k: v.numpy().copy() for k, v in ae.state_dict().items()}})
