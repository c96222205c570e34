"""The native module's arguments and constants, as Python sees them."""

import array
import struct

from loopbreak import _core

LOOP = "loadTools. " * 40


def test_rule_names_are_the_codes_of_the_columns() -> None:
    texts = ["clean text", LOOP, "x" * 5 + "\n".join(["same line"] * 30)]
    encoded = [t.encode() for t in texts]
    offsets = [0]
    for e in encoded:
        offsets.append(offsets[-1] + len(e))
    data = b"".join(encoded)
    columns = _core.scan_utf8_columns(data, array.array("q", offsets))
    rows, codes = (struct.unpack(f"<{len(c) // 8}q", c) for c in columns[:2])
    expected = [(row, f.rule) for row, fs in enumerate(_core.scan_many(texts)) for f in fs]
    assert len(expected) >= 2
    assert [(row, _core.RULE_NAMES[code]) for row, code in zip(rows, codes)] == expected
    assert _core.RULE_NAMES == ("periodic_run", "long_block", "identical_lines")
