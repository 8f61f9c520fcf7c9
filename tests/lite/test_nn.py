"""audiopd.lite.nn against torch.nn.functional: the layers every torch-free network is made of."""

import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from audiopd.lite import nn as L


@pytest.mark.parametrize("groups,c_in,c_out", [(1, 8, 6), (8, 8, 8)])
@pytest.mark.parametrize("k,padding,stride,dilation", [(3, 1, 1, 1), (5, 2, 2, 1), (3, 2, 1, 2), (1, 0, 1, 1)])
def test_conv1d_matches_torch(groups, c_in, c_out, k, padding, stride, dilation):
    g = torch.Generator().manual_seed(k * 10 + stride)
    x = torch.randn(2, 37, c_in, generator=g)
    w = torch.randn(c_out, c_in // groups, k, generator=g)
    b = torch.randn(c_out, generator=g)
    ref = F.conv1d(x.transpose(1, 2), w, b, padding=padding, stride=stride, dilation=dilation, groups=groups)
    got = L.conv1d(x.numpy(), w.numpy(), b.numpy(), padding=padding, stride=stride, dilation=dilation, groups=groups)
    np.testing.assert_allclose(got, ref.transpose(1, 2).numpy(), atol=1e-5)
    one = L.conv1d(x[0].numpy(), w.numpy(), b.numpy(), padding=padding, stride=stride, dilation=dilation,
                   groups=groups)
    np.testing.assert_allclose(one, got[0], atol=1e-6)


def test_conv1d_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="too short"):
        L.conv1d(np.zeros((2, 3), np.float32), np.zeros((3, 3, 5), np.float32))
    with pytest.raises(NotImplementedError):
        L.conv1d(np.zeros((9, 4), np.float32), np.zeros((4, 2, 3), np.float32), groups=2)


def test_activations_and_norm_match_torch():
    x = torch.linspace(-9, 9, 2001)
    np.testing.assert_allclose(L.gelu(x.numpy()), F.gelu(x).numpy(), atol=1e-6)
    np.testing.assert_allclose(L.erf(x.numpy()), torch.erf(x).numpy(), atol=5e-7)
    y = torch.randn(3, 5, 16)
    w, b = torch.randn(16), torch.randn(16)
    np.testing.assert_allclose(L.layer_norm(y.numpy(), w.numpy(), b.numpy()),
                               F.layer_norm(y, (16,), w, b).numpy(), atol=1e-5)
    np.testing.assert_allclose(L.log_softmax(y.numpy()), F.log_softmax(y, -1).numpy(), atol=1e-5)
    np.testing.assert_allclose(L.softmax(y.numpy()), F.softmax(y, -1).numpy(), atol=1e-6)
    lw = torch.randn(7, 16)
    np.testing.assert_allclose(L.linear(y.numpy(), lw.numpy(), b[:7].numpy()), F.linear(y, lw, b[:7]).numpy(),
                               atol=1e-5)


def test_load_weights_upcasts_float16(tmp_path):
    from safetensors.numpy import save_file

    save_file({"a.w": np.ones((2, 2), np.float16), "a.n": np.arange(3), "b.w": np.zeros(1, np.float32)},
              str(tmp_path / "w.safetensors"))
    got = L.load_weights(tmp_path / "w.safetensors", prefix="a.")
    assert set(got) == {"w", "n"} and got["w"].dtype == np.float32 and got["n"].dtype == np.int64


def test_import_stays_torch_free():
    code = "import sys, audiopd.lite.nn; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
