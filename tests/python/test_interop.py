"""DLPack both ways with numpy and torch (CPU): every dtype each side has, strided producers,
a capsule read once, and the errors for what vkspmd cannot hold."""
import numpy as np
import pytest
import torch

import vkspmd

TORCH_TYPES = [(torch.float32, vkspmd.float32), (torch.float16, vkspmd.float16),
               (torch.bfloat16, vkspmd.bfloat16), (torch.int32, vkspmd.int32)]


def test_dlpack_device_is_cpu():
    assert vkspmd.zeros(2).__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("torch_type,dtype", TORCH_TYPES)
def test_torch_round_trip(torch_type, dtype):
    source = (torch.arange(12) - 4).reshape(3, 4).to(torch_type)
    t = vkspmd.from_dlpack(source)
    assert t.dtype == dtype and t.shape == (3, 4)
    back = torch.from_dlpack(t * 2)
    assert back.dtype == torch_type
    assert torch.equal(back, source * 2)


def test_torch_strided_and_export_ownership():
    source = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    for view in (source.t(), source[:, 1::2], source[1:3]):
        np.testing.assert_array_equal(vkspmd.from_dlpack(view).numpy(), view.numpy())
    t = vkspmd.tensor(np.arange(6, dtype=np.float32))
    capsule = t.__dlpack__()
    exported = torch.from_dlpack(capsule)
    # The export is the gathered host copy, handed over as is: torch owns it now, and writing
    # to it leaves the vkspmd tensor as it was.
    exported[0] = 100
    assert exported.tolist()[:2] == [100.0, 1.0] and t.numpy()[0] == 0
    with pytest.raises(Exception):
        torch.from_dlpack(capsule)


@pytest.mark.parametrize("numpy_type", [np.float32, np.float16, np.int32, np.uint32])
def test_numpy_round_trip(numpy_type):
    source = np.arange(10, dtype=numpy_type).reshape(2, 5)
    t = vkspmd.from_dlpack(source)
    np.testing.assert_array_equal(t.numpy(), source)
    np.testing.assert_array_equal(np.from_dlpack(t), source)


def test_capsule_is_consumed_once():
    capsule = vkspmd.tensor([1.0, 2.0]).__dlpack__()
    np.testing.assert_array_equal(vkspmd.from_dlpack(capsule).numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="already consumed"):
        vkspmd.from_dlpack(capsule)
    unread = vkspmd.tensor([3.0]).__dlpack__()
    del unread  # Freed by the capsule's destructor, not leaked (ASan builds would say).


def test_dlpack_errors():
    with pytest.raises(TypeError, match="float64|64 bits"):
        vkspmd.from_dlpack(torch.zeros(2, dtype=torch.float64))
    with pytest.raises(TypeError, match="DLPack"):
        vkspmd.from_dlpack(object())
    with pytest.raises(ValueError, match="stream"):
        vkspmd.zeros(2).__dlpack__(stream=1)
