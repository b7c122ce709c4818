# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Copyright and licence check (what ament_copyright checks).

ament_copyright is not installable from PyPI, so this test applies its rule
directly: every Python source file starts with a copyright line and the SPDX
licence identifier of the package (Apache-2.0, as in package.xml and
LICENSE).
"""

from pathlib import Path
import re

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIRS = ['hil_bridge', 'cone_detection', 'path_planning', 'aeb_control',
        'launch', 'test', 'scripts']
HEADER = re.compile(r'^# Copyright \d{4} .+\n# SPDX-License-Identifier: '
                    r'Apache-2\.0$', re.M)


def _sources() -> list:
    files = [ROOT / 'setup.py']
    for d in DIRS:
        files += sorted((ROOT / d).rglob('*.py'))
    return files


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright() -> None:
    """Every source file carries the copyright and licence header."""
    missing = []
    for path in _sources():
        head = '\n'.join(path.read_text(encoding='utf-8').splitlines()[:4])
        if not HEADER.search(head):
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, f'files without copyright/licence header: {missing}'


def test_licence_matches_package_xml() -> None:
    """package.xml declares the licence that LICENSE holds."""
    xml = (ROOT / 'package.xml').read_text(encoding='utf-8')
    assert '<license>Apache-2.0</license>' in xml
    assert 'Apache License' in (ROOT / 'LICENSE').read_text(encoding='utf-8')
