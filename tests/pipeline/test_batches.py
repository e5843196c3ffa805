"""The batch function of the analysis's one pass: keys of the masked texts, and sample rows."""

from __future__ import annotations

import pandas as pd

from deadletter.pipeline import batches


def _keyed(ids: list[str | None], errors: list[str]) -> pd.DataFrame:
    n = len(ids)
    return batches.keyed(
        pd.Series(ids, dtype=object),
        pd.Series(errors, dtype=object),
        pd.Series(["handler raised"] * n, dtype=object),
        pd.Series([None] * n, dtype=object),
    )


def test_equal_masked_texts_share_a_key_in_every_batch_and_carry_their_texts_once() -> None:
    # Given two batches of timeouts (one masked text) and one other failure
    first = _keyed(["a", "b", "c"], ["timeout after 3s", "timeout after 40s", "disk full"])
    second = _keyed(["d"], ["timeout after 7s"])
    # Then the timeouts share one key, in both batches, and the other has its own
    assert first["mask_key"][0] == first["mask_key"][1] == second["mask_key"][0]
    assert first["mask_key"][2] != first["mask_key"][0]
    # And each batch sends a key's texts with its first row only
    masked = batches.masked(
        pd.Series(["timeout after 3s"]), pd.Series(["handler raised"]), pd.Series([None])
    )
    assert first["tokens_text"].tolist() == [
        masked["tokens_text"][0],
        None,
        first["tokens_text"][2],
    ]
    assert first["signature"][1] is None and first["context_text"][1] is None
    assert second["tokens_text"][0] == masked["tokens_text"][0]
    assert first["mask_key"][0] == batches.mask_key_of(
        masked["signature"][0], masked["tokens_text"][0], masked["context_text"][0]
    )


def test_the_first_ids_of_each_key_are_marked_as_samples_a_missing_id_first() -> None:
    # Given eight dead letters of one failure, in no order, one without an id, and one other
    ids = ["m7", "m2", None, "m9", "m1", "m5", "m3", "m8", "z0"]
    errors = [f"timeout after {i}s" for i in range(8)] + ["disk full"]
    marked = _keyed(ids, errors)
    # Then the five first by id (the missing one first, as Spark orders) are samples
    sampled = {i for i, s in zip(ids, marked["sample"], strict=True) if s}
    assert sampled == {None, "m1", "m2", "m3", "m5", "z0"}
