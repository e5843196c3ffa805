"""Reading collapsed py-spy stacks of the server."""

from __future__ import annotations

from bench.peers.profile import hot_spots, parse_collapsed, self_time

RAW = """\
run (uvicorn/server.py:10);claim (deadletter/engine/engine.py:5);execute (sqlite3:1) 6
run (uvicorn/server.py:10);claim (deadletter/engine/engine.py:7);commit (sqlite3:2) 3
run (uvicorn/server.py:10);parse (json/decoder.py:3) 1
"""


def test_collapsed_lines_become_stacks_with_counts() -> None:
    stacks = parse_collapsed(RAW + "garbage\n")
    assert len(stacks) == 3
    assert stacks[0][1] == 6
    assert stacks[0][0][-1] == "execute (sqlite3:1)"


def test_inclusive_time_merges_lines_of_one_function() -> None:
    total, hot = hot_spots(RAW, "deadletter/")
    assert total == 10
    assert hot == [("claim (deadletter/engine/engine.py)", 9)]


def test_self_time_is_counted_at_the_leaf() -> None:
    assert self_time(RAW)[0] == ("execute (sqlite3)", 6)


def test_stacks_that_end_waiting_for_work_are_not_busy() -> None:
    from bench.peers.profile import busy

    idle = "_bootstrap (threading.py:1);wait (threading.py:2);Condition.wait (threading.py:3) 50\n"
    assert hot_spots(busy(RAW + idle))[0] == 10


def test_samples_count_for_the_layer_of_their_deepest_named_frame() -> None:
    from bench.peers.profile import by_layer

    loop = "Runner.run (asyncio/runners.py:118)"
    hot = "HotRoutes.__call__ (deadletter/api/hot.py:100)"
    face = "call (deadletter/api/zaqar/context.py:180)"
    engine = "claim (deadletter/engine/claims.py:40)"
    text = "\n".join(
        [
            f"{loop};{hot};{face};{engine};__init__ (<string>:2) 5",  # the engine's dataclass
            f"{loop};{hot};{face} 3",
            f"{loop};{hot} 2",
            f"{loop} 1",
            "somewhere (elsewhere.py:1) 4",
        ]
    )
    total, layers = by_layer(text)
    assert total == 15
    assert dict(layers) == {
        "engine and store": 5,
        "face: parsing, handler, answer": 3,
        "dispatch (hot routes, limits)": 2,
        "uvicorn and the event loop": 1,
        "other": 4,
    }
