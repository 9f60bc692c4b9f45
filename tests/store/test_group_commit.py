"""Group commit: writes that queue behind a commit share the next one; a bad write fails alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.records import SegmentRecord
from tm_guide.store import Store
from tm_guide.store.group_commit import GroupCommit


class _Recorder:
    """A commit function that records its groups; the first commit waits for `release`."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, key: int, writes: Sequence[str]) -> list[str]:
        self.groups.append(list(writes))
        if len(self.groups) == 1:
            self.entered.set()
            assert self.release.wait(10)
        if "bad" in writes:
            raise ValueError("bad write")
        return [w.upper() for w in writes]


def _start(
    group: GroupCommit[str, str], key: int, write: str, out: dict[str, object]
) -> threading.Thread:
    def run() -> None:
        try:
            out[write] = group.write(key, write)
        except Exception as exc:  # reported through `out`
            out[write] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _wait_queued(group: GroupCommit[str, str], key: int, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(group._queues.get(key, [])) < count:
        assert time.monotonic() < deadline, "writers did not queue"
        time.sleep(0.001)


def _queued_behind_a_commit(
    max_group: int, writes: Sequence[str]
) -> tuple[_Recorder, GroupCommit[str, str], dict[str, object], list[threading.Thread]]:
    """A group committer whose first write ("first", key 1) is held inside its commit, with
    `writes` for key 1 queued behind it: the recorder (release it to go on), the committer,
    each write's result and the writers' threads."""
    recorder = _Recorder()
    group: GroupCommit[str, str] = GroupCommit(recorder, max_group=max_group)
    out: dict[str, object] = {}
    threads = [_start(group, 1, "first", out)]
    assert recorder.entered.wait(10)
    threads += [_start(group, 1, w, out) for w in writes]
    _wait_queued(group, 1, len(writes))
    return recorder, group, out, threads


def test_writes_queued_behind_a_commit_share_the_next_one() -> None:
    recorder, _, out, threads = _queued_behind_a_commit(64, [f"w{i}" for i in range(5)])
    recorder.release.set()
    for thread in threads:
        thread.join(10)
    assert recorder.groups[0] == ["first"]
    assert sorted(recorder.groups[1]) == [f"w{i}" for i in range(5)] and len(recorder.groups) == 2
    assert out == {"first": "FIRST", **{f"w{i}": f"W{i}" for i in range(5)}}


def test_max_group_bounds_a_commit_and_keys_do_not_mix() -> None:
    recorder, group, out, threads = _queued_behind_a_commit(2, [f"w{i}" for i in range(5)])
    threads.append(_start(group, 2, "other", out))  # another memory does not wait for memory 1
    threads[-1].join(10)
    assert out["other"] == "OTHER"
    recorder.release.set()
    for thread in threads:
        thread.join(10)
    assert all(len(g) <= 2 for g in recorder.groups)
    assert sum(len(g) for g in recorder.groups) == 7
    assert all(out[f"w{i}"] == f"W{i}" for i in range(5))


def test_a_failing_write_fails_only_its_own_caller() -> None:
    recorder, _, out, threads = _queued_behind_a_commit(64, ["a", "bad", "b"])
    recorder.release.set()
    for thread in threads:
        thread.join(10)
    assert out["a"] == "A" and out["b"] == "B"
    assert isinstance(out["bad"], ValueError)
    # the failed group of three, then each write again on its own
    assert sorted(recorder.groups[1]) == ["a", "b", "bad"]
    assert sorted(map(tuple, recorder.groups[2:])) == [("a",), ("b",), ("bad",)]


def test_concurrent_store_writes_share_revisions_and_read_back_their_own_rows(
    store: Store,
) -> None:
    memory = store.create_memory("together", "en", "de")
    store.add_segment(memory, SegmentRecord("seed sentence", "Saatsatz"))
    barrier = threading.Barrier(12)
    results: dict[int, object] = {}

    def writer(i: int) -> None:
        barrier.wait()
        record = SegmentRecord(f"sentence {i}", f"Satz {i}", tuid=f"t{i}")
        if i == 11:
            record = SegmentRecord(" ", "leer")  # refused before it joins a group
        try:
            results[i] = store.add_segment(memory, record)
        except InvalidInput as exc:
            results[i] = exc

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert isinstance(results[11], InvalidInput)
    for i in range(11):
        segment = results[i]
        assert segment.source == f"sentence {i}" and segment.tuid == f"t{i}"  # type: ignore[union-attr]
    after = store.get_memory(memory.id)
    assert after.segment_count == 12
    assert after.revision <= 12
    hits = store.search([memory.id], "sentence 7", limit=1)
    assert hits[0].segment.source == "sentence 7"


def test_a_write_replaced_in_its_own_group_reads_back_the_replacement(store: Store) -> None:
    memory = store.create_memory("replaced", "en", "de")
    (first, _), (second, after) = store._commit_group(
        memory.id,
        [
            (memory, SegmentRecord("old text", "alter Text", tuid="u1")),
            (memory, SegmentRecord("new text", "neuer Text", tuid="u1")),
        ],
    )
    assert first.id == second.id and second.source == "new text"
    assert store.get_memory(memory.id).segment_count == after.segment_count == 1


@pytest.mark.parametrize("max_group", [0, -1])
def test_max_group_must_be_positive(max_group: int) -> None:
    with pytest.raises(ValueError):
        GroupCommit(lambda key, writes: list(writes), max_group)
