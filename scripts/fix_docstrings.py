#!/usr/bin/env python3
# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Rewrite multi-line docstrings to the ament style (D213).

ament_pep257 wants the summary of a multi-line docstring on the second
line. Usage: ``python3 scripts/fix_docstrings.py FILE...`` (edits in place).
"""

import re
import sys

OPEN = re.compile(r'^(\s*)(r?""")(\S.*)$')


def fix(text: str) -> str:
    """Return ``text`` with each multi-line docstring opened on its own line."""
    out = []
    for line in text.splitlines(keepends=True):
        m = OPEN.match(line.rstrip('\n'))
        if m and '"""' not in m.group(3):
            indent, quote, rest = m.groups()
            out.append(f'{indent}{quote}\n{indent}{rest}\n')
        else:
            out.append(line)
    return ''.join(out)


if __name__ == '__main__':
    for name in sys.argv[1:]:
        with open(name, encoding='utf-8') as f:
            src = f.read()
        new = fix(src)
        if new != src:
            with open(name, 'w', encoding='utf-8') as f:
                f.write(new)
            print('fixed', name)
