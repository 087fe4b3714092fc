"""kvstash.copy_strided against numpy's copy: every element width, transposes whose sizes
are not multiples of the SIMD squares, merged and broadcast axes, and the refusals."""

import itertools

import numpy as np
import pytest

import kvstash


def _source(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize,
                       dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.int64, np.complex128])
@pytest.mark.parametrize("shape", [(1,), (37,), (5, 3), (16, 16), (33, 17), (3, 130, 7),
                                   (128, 4, 128), (2, 3, 5, 19)])
def test_every_permutation_matches_numpy(dtype, shape):
    src = _source(shape, dtype, seed=len(shape))
    for perm in itertools.permutations(range(len(shape))):
        # dst is contiguous in the permuted order: a transpose of src for most perms.
        dst_base = np.zeros([shape[p] for p in perm], dtype=dtype)
        dst = dst_base.transpose(np.argsort(perm))
        kvstash.copy_strided(dst, src)
        np.testing.assert_array_equal(dst, src)
        back = np.zeros_like(src)
        kvstash.copy_strided(back, dst)
        np.testing.assert_array_equal(back, src)


def test_page_slabs_leave_their_neighbours_alone():
    # The K and V slabs of a packed CPU page (vLLM's layout): K transposed, V row-major.
    tokens, heads, dim = 128, 4, 128
    page = np.full(heads * 2 * dim * tokens, -1, dtype=np.int32)
    k = np.lib.stride_tricks.as_strided(page, (tokens, heads, dim),
                                        (4, 2 * dim * tokens * 4, tokens * 4))
    v = np.lib.stride_tricks.as_strided(page[dim * tokens:], (tokens, heads, dim),
                                        (dim * 4, 2 * dim * tokens * 4, 4))
    k_src, v_src = _source(k.shape, np.int32, 1), _source(v.shape, np.int32, 2)
    kvstash.copy_strided(k, k_src)
    kvstash.copy_strided(v, v_src)
    np.testing.assert_array_equal(k, k_src)
    np.testing.assert_array_equal(v, v_src)
    assert not (page == -1).any()  # the two slabs tile the page exactly


def _line_aligned(nbytes):
    """A zeroed uint8 array of ``nbytes`` starting on a 64-byte cache line."""
    raw = np.zeros(nbytes + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + nbytes]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.int64])
def test_large_transposes_into_whole_cache_lines(dtype):
    # Destination rows on cache lines, 16 KiB and more: the transpose streams its stores.
    # Sizes that are not multiples of a square also take the element-wise remainder.
    rows, cols = 259, 131
    item = np.dtype(dtype).itemsize
    pitch = -(-rows * item // 64) * 64 // item  # destination row length, whole lines
    base = _line_aligned(cols * pitch * item).view(dtype).reshape(cols, pitch)
    base[:] = 7
    src = _source((rows, cols), dtype, seed=item)
    dst = base[:, :rows].T
    kvstash.copy_strided(dst, src)
    np.testing.assert_array_equal(dst, src)
    assert (base[:, rows:] == 7).all()  # the padding after each row is untouched


def test_strided_and_sliced_views():
    src = _source((40, 50), np.int16, 3)
    dst = np.zeros((80, 150), dtype=np.int16)
    kvstash.copy_strided(dst[::2, 1::3], src)
    np.testing.assert_array_equal(dst[::2, 1::3], src)
    untouched = np.ones(dst.shape, dtype=bool)
    untouched[::2, 1::3] = False
    assert not dst[untouched].any()
    kvstash.copy_strided(dst[1::2, :50], np.broadcast_to(src[0], (40, 50)))
    np.testing.assert_array_equal(dst[1::2, :50], np.broadcast_to(src[0], (40, 50)))


def test_negative_strides():
    src = _source((24, 40), np.int32, 4)
    dst = np.zeros((40, 24), np.int32)
    kvstash.copy_strided(dst.T[::-1, ::-1], src)
    np.testing.assert_array_equal(dst.T[::-1, ::-1], src)
    back = np.zeros_like(src)
    kvstash.copy_strided(back, src[::-1])
    np.testing.assert_array_equal(back, src[::-1])


def test_empty_and_zero_dim():
    kvstash.copy_strided(np.zeros((0, 4), np.int32), np.zeros((0, 4), np.int32))
    dst = np.zeros((), np.int64)
    kvstash.copy_strided(dst, np.array(7, np.int64))
    assert int(dst) == 7


def test_refusals_name_the_problem():
    a = np.zeros((4, 4), np.int32)
    with pytest.raises(kvstash.InvalidArgument, match="shape"):
        kvstash.copy_strided(a, np.zeros((4, 5), np.int32))
    with pytest.raises(kvstash.InvalidArgument, match="element width"):
        kvstash.copy_strided(a, np.zeros((4, 4), np.int16))
    with pytest.raises(kvstash.InvalidArgument, match="overlap"):
        kvstash.copy_strided(a[:, :2], a[:, 1:3])
    with pytest.raises(kvstash.InvalidArgument, match="at most 8"):
        kvstash.copy_strided(np.zeros((1,) * 9, np.int8), np.zeros((1,) * 9, np.int8))
    ro = np.zeros((4, 4), np.int32)
    ro.flags.writeable = False
    with pytest.raises(kvstash.InvalidArgument, match="dst is not a writable CPU array"):
        kvstash.copy_strided(ro, a)
    with pytest.raises(kvstash.InvalidArgument, match="src is not a CPU array"):
        kvstash.copy_strided(a, [1, 2, 3])
    np.testing.assert_array_equal(a, 0)  # nothing was written by a refused call
