"""Collectives over named mesh axes inside manual regions (vkspmd.enable_manual_sharding,
vkspmd.shard_map), JAX's jax.lax collectives with vkspmd's names: all_reduce (psum/pmean/pmax/
pmin), all_gather, reduce_scatter (psum_scatter), all_to_all, ppermute and axis_index (the
device's index along mesh axes). Each is one call of the C++ API (vkspmd/manual.h,
docs/manual_sharding.md)."""

from ._C.collectives import (all_gather, all_reduce, all_to_all, axis_index,  # noqa: F401
                             ppermute, reduce_scatter)
