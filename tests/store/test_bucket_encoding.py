"""A bucket's bytes (pipeline.store.buckets.encode), compressed on the calling thread, are the bytes
Arrow's default (buffers compressed on its thread pool) gives: a bucket id is a hash of them, and
the MongoDB load skips the buckets whose ids an earlier build loaded. They decode to the rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from pipeline.store.buckets import decode, encode


def _rows(rng: np.random.Generator, n: int) -> pa.Table:
    words = np.array(["alpha", "beta", "gamma", "delta", ""], dtype=object)
    text = [None if rng.random() < 0.1 else " ".join(rng.choice(words, rng.integers(0, 40))) for _ in range(n)]
    return pa.table({
        "doc_id": [f"PMID:{i}" for i in rng.integers(1, 10**8, n)],
        "year": pa.array(rng.integers(1950, 2026, n), pa.int32()),
        "title": text,
        "mesh": [None if rng.random() < 0.2 else list(rng.choice(words, rng.integers(0, 4))) for _ in range(n)],
        "weight": rng.random(n),
    })  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_a_bucket_encodes_to_the_default_bytes_and_decodes_to_its_rows(seed):
    rng = np.random.default_rng(seed)
    rows = _rows(rng, int(rng.integers(1, 400)))
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, rows.schema, options=ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_table(rows)
    data = encode(rows)
    assert data == sink.getvalue().to_pybytes()
    assert decode(data).equals(rows)
