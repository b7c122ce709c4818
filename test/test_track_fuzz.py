# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Fuzz the track loader with mutated copies of the test track files.

Every mutant (cut short, a line dropped, repeated or mangled, a number
made NaN, inf, 1e300 or empty, NUL bytes, a byte-order mark, CRLF) either
loads into a track with finite geometry or raises one ``ValueError`` /
``OSError`` line naming the file: never another exception, a multi-line
message or an answer with NaN in it.
"""

from pathlib import Path

from file_mutations import mutate, NUMBER, OPS
from hil_bridge.sim import track_files as F
from hypothesis import given, HealthCheck, settings, strategies as st
import numpy as np

DATA = Path(__file__).resolve().parent / 'data' / 'tracks'
FILES = sorted(p for p in DATA.iterdir() if p.suffix in (
    '.csv', '.yaml', '.json', '.sdf', '.world'))
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@FUZZ
@given(index=st.integers(0, len(FILES) - 1),
       op=st.sampled_from(OPS),
       at=st.floats(0.0, 1.0))
def test_a_mutated_track_file_loads_or_names_itself_in_one_line(
        tmp_path_factory, index: int, op: str, at: float) -> None:
    """Load a mutant: a finite track, or one error line naming the file."""
    src = FILES[index]
    path = tmp_path_factory.mktemp('fuzz') / src.name
    path.write_text(mutate(src.read_text(encoding='utf-8'), op, at),
                    encoding='utf-8', errors='surrogateescape')
    try:
        track = F.load_track_file(str(path)).track
    except (ValueError, OSError) as exc:
        msg = str(exc)
        assert str(path) in msg, msg
        assert '\n' not in msg.strip(), msg
        return
    assert np.isfinite(track.centerline).all()
    assert np.isfinite(track.cones.xy).all()
    assert np.isfinite(track.width)


def test_the_number_mutants_are_refused_with_their_line(tmp_path) -> None:
    """A number made NaN, inf, 1e300 or empty: refused naming its line."""
    text = (DATA / 'eufs_oval.csv').read_text(encoding='utf-8')
    nums = list(NUMBER.finditer(text))
    # a yellow cone's x, past the middle of the file
    k = next(k for k in range(len(nums) // 2, len(nums))
             if text.endswith('yellow,', 0, nums[k].start()))
    at = (k + 0.5) / len(nums)
    line = text.count('\n', 0, nums[k].start()) + 1
    for op, word in (('nan', 'not finite'), ('inf', 'not finite'),
                     ('1e300', 'out of range'), ('empty', 'missing')):
        path = tmp_path / f'{op}.csv'
        path.write_text(mutate(text, op, at), encoding='utf-8')
        try:
            F.load_track_file(str(path))
        except ValueError as exc:
            assert str(exc).startswith(f"{path}:{line}: field 'x'"), exc
            assert word in str(exc), exc
        else:
            raise AssertionError(f'the {op} mutant loaded')
