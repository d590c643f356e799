"""What crosses from a student's kernel to the checker: plain data survives the trip, nothing else does."""

from __future__ import annotations

import json
import math

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
