"""What crosses from a student's kernel to the checker: plain data survives the trip, nothing else does."""

from __future__ import annotations

import json
import math
import random
import sys

import numpy as np
import pytest

from iolab.homework import answers


@pytest.mark.parametrize("value", [None, True, 3, -2.5, "S", b"\x00ok", [1, "a"], (1, 2), {1, 2}, frozenset({3}),
                                   {"select": "in proportion", 3: (1, None)}, TimeoutError, [[[]]]])
def test_plain_values_come_back_equal_and_of_the_same_type(value):
    back = answers.decode(json.loads(json.dumps(answers.encode(value))))
    assert back == value and type(back) is type(value)


def test_numpy_scalars_and_arrays_come_back_as_python_numbers_and_lists():
    assert answers.decode(answers.encode(np.int64(7))) == 7 and type(answers.decode(answers.encode(np.int64(7)))) is int
    assert answers.decode(answers.encode(np.array([1.5, 2.5]))) == [1.5, 2.5]


def test_non_finite_floats_survive_json():
    back = answers.decode(json.loads(json.dumps(answers.encode([math.inf, -math.inf, math.nan]))))
    assert back[:2] == [math.inf, -math.inf] and math.isnan(back[2])


def test_objects_that_could_lie_are_refused_by_exact_type():
    class Yes(str):
        def __eq__(self, other):
            return True

    class Anything:
        pass

    for value in (Yes("S"), Anything(), lambda: 1, {"k": Yes("v")}):
        with pytest.raises(answers.NotData):
            answers.encode(value)


def test_decode_builds_only_what_encode_makes():
    for data in ({"$class": "os.system"}, {"$class": "nosuchmodule.X"}, {"$eval": "1"}, {"a": 1, "b": 2},
                 {"$bytes": 3}):
        with pytest.raises(answers.NotData):
            answers.decode(data)


def test_dump_and_load_say_which_answers_are_missing_or_refused(tmp_path):
    path = tmp_path / "answers.json"
    answers.dump(["given", "absent", "object"], {"given": [1, 2], "object": object()}, str(path))
    got = answers.load(path.read_text())
    assert got["given"] == {"value": [1, 2]}
    assert got["absent"] == {"missing": True}
    assert "not plain data" in got["object"]["refused"]


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"x": {"$value": 1, "extra": 2}}', '{"x": {"$eval": 1}}',
                                  "{" + '"x": ' * 1 + '"' + "a" * answers.MAX_BYTES + '"}'])
def test_a_file_that_is_not_an_answers_file_is_rejected_as_a_whole(text):
    with pytest.raises(answers.NotData):
        answers.load(text)


def test_the_export_cell_writes_the_answers_it_names(tmp_path):
    path = tmp_path / "a.json"
    namespace = {"x": 42}
    exec(answers.export_cell({"x", "y"}, str(path)), namespace)
    assert answers.load(path.read_text()) == {"x": {"value": 42}, "y": {"missing": True}}
    assert "_iolab_answers" not in namespace


def test_pandas_objects_and_the_kits_dataclasses_come_back_as_themselves():
    import pandas as pd

    from iolab.topics.c10k.runner import ProgramRun

    series = pd.Series({"virtual": 300.5, "resident": 12.0}, name="per thread")
    frame = pd.DataFrame({"rps": [1.5, 2.0], "model": ["a", "b"]}, index=["x", "y"])
    run = ProgramRun("threads", "pipe", 20_000, 1.0, "failed", started=100, error="ulimit -v")
    for value in (series, frame):
        back = answers.decode(json.loads(json.dumps(answers.encode(value))))
        assert type(back) is type(value) and back.equals(value)
    assert answers.decode(json.loads(json.dumps(answers.encode(run)))) == run


def test_a_dataclass_of_the_students_own_is_refused_even_named_like_the_kits():
    import dataclasses

    @dataclasses.dataclass
    class ProgramRun:
        status: str

    ProgramRun.__module__ = "iolab.topics.c10k.fake"
    with pytest.raises(answers.NotData):
        answers.decode(json.loads(json.dumps(answers.encode(ProgramRun("failed")))))


# --- answers a changed kernel writes: whatever the text, NotData and nothing else -------------------

# Each crashed decode or load with another error (TypeError, ValueError, RecursionError), which the
# checker did not catch: every row of the submission became the grader's own "error".
MALFORMED = {
    "a dict key that is a list": {"$dict": [[[1], 2]]},
    "a set of lists": {"$set": [[1], [2]]},
    "a frozenset of dicts": {"$frozenset": [{"$dict": []}]},
    "a dict key that is a series": {"$dict": [[{"$series": ["n", [], []]}, 1]]},
    "bytes that are not hexadecimal": {"$bytes": "zz"},
    "a frame of a scalar, broadcast to its labels": {"$frame": [list(range(3)), list(range(3)), 5]},
    "a frame of no rows for three labels": {"$frame": [["a"], [1, 2, 3], []]},
    "a frame with a short row": {"$frame": [["a", "b"], [0], [[1]]]},
    "a series with fewer values than labels": {"$series": ["n", [1, 2], [1]]},
    "arrays nested past the depth limit": json.loads("[" * (answers.MAX_DEPTH + 5) + "]" * (answers.MAX_DEPTH + 5)),
    "an unknown tag": {"$eval": "1"},
}


@pytest.mark.parametrize("data", MALFORMED.values(), ids=MALFORMED.keys())
def test_data_encode_never_writes_is_malformed_and_makes_the_whole_file_not_data(data):
    with pytest.raises(answers.Malformed):
        answers.decode(data)
    with pytest.raises(answers.NotData, match="`x` is not what the grader's cell writes"):
        answers.load(json.dumps({"x": {"$value": data}}))


@pytest.mark.parametrize("data", [{"$series": [[1], [1], [1]]}, {"$class": "iolab.nosuchmodule.X"},
                                  {"$dataclass": ["iolab.topics.c10k.runner.ProgramRun", {}]}])
def test_a_value_the_checker_cannot_take_is_refused_alone(data):
    import iolab.topics.c10k.runner  # noqa: F401  (the checker has imported it)

    got = answers.load(json.dumps({"x": {"$value": data}, "y": {"$value": 1}}))
    assert "refused" in got["x"] and got["y"] == {"value": 1}


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"x": {"$value": ' + "[" * 100_000 + "]" * 100_000 + "}}", b"{}", None, 3])
def test_load_refuses_text_nested_beyond_json_and_what_is_not_text(text):
    with pytest.raises(answers.NotData):
        answers.load(text)


def test_an_answers_file_the_grader_would_not_read_is_refused_with_the_graders_reason():
    with pytest.raises(answers.NotData, match="the answers file is not a regular file: a FIFO"):
        answers.load(answers.unreadable("is not a regular file: a FIFO"))


def test_a_frame_is_no_bigger_than_the_text_that_describes_it():
    labels = list(range(2_000))  # a broadcast would make 4,000,000 cells of these 20 kB
    with pytest.raises(answers.Malformed):
        answers.decode({"$frame": [labels, labels, 0]})


def test_a_class_is_looked_up_without_running_a_modules_getattr(monkeypatch):
    import types

    asked = []
    lazy = types.ModuleType("lazymodule")
    lazy.__getattr__ = lambda name: asked.append(name) or ValueError  # as a lazy export table would import
    monkeypatch.setitem(sys.modules, "lazymodule", lazy)
    with pytest.raises(answers.NotData):
        answers.decode({"$class": "lazymodule.ValueError"})
    assert asked == []


def _random_data(rng: random.Random, depth: int = 0):
    """JSON of the shapes encode writes, with its tags, nested and mixed at random (most of it malformed)."""
    if depth > 4 or rng.random() < 0.3:
        return rng.choice([None, True, 0, -1.5, "s", "nan", "00ff", "builtins.int", [], {}])
    items = [_random_data(rng, depth + 1) for _ in range(rng.randrange(4))]
    tag = rng.choice(["$float", "$bytes", "$tuple", "$set", "$frozenset", "$dict", "$class", "$series", "$frame",
                      "$dataclass", "list", "pair"])
    if tag == "list":
        return items
    if tag == "pair":
        return [[item, item] for item in items]
    return {tag: rng.choice([items, [[item, item] for item in items], items[0] if items else "x"])}


def test_decode_raises_nothing_but_not_data_on_thousands_of_random_tagged_values():
    rng = random.Random(37)
    kinds = set()
    for _ in range(5_000):
        data = _random_data(rng)
        try:
            answers.decode(json.loads(json.dumps(data)))
            kinds.add("value")
        except answers.NotData:
            kinds.add("refused")
    assert kinds == {"value", "refused"}  # the generator makes both, so the loop tested something
