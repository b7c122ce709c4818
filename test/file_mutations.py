# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Mutations of a text file for the file fuzz tests (one per call, deterministic)."""

import re

#: a decimal number with a fraction (coordinates, parameters)
NUMBER = re.compile(r'-?\d+\.\d+')
#: the mutations :func:`mutate` knows
OPS = ('cut', 'drop', 'repeat', 'mangle', 'nan', 'inf', '1e300', 'empty',
       'nul', 'bom', 'crlf')


def mutate(text: str, op: str, at: float) -> str:
    """Return ``text`` changed by ``op`` at the relative position ``at`` (0-1)."""
    lines = text.split('\n')
    i = min(int(at * len(lines)), len(lines) - 1)
    nums = list(NUMBER.finditer(text))
    if op == 'cut':
        return text[:int(at * len(text))]
    if op == 'drop':
        return '\n'.join(lines[:i] + lines[i + 1:])
    if op == 'repeat':
        return '\n'.join(lines[:i + 1] + lines[i:])
    if op == 'mangle':
        lines[i] = lines[i][:len(lines[i]) // 2] + '%$#@!'
        return '\n'.join(lines)
    if op in ('nan', 'inf', '1e300', 'empty') and nums:
        m = nums[min(int(at * len(nums)), len(nums) - 1)]
        new = {'nan': 'nan', 'inf': '-inf', '1e300': '1e300', 'empty': ''}[op]
        return text[:m.start()] + new + text[m.end():]
    if op == 'nul':
        k = int(at * len(text))
        return text[:k] + '\x00\xff' + text[k:]
    if op == 'bom':
        return '\ufeff' + text
    if op == 'crlf':
        return text.replace('\n', '\r\n')
    return text
