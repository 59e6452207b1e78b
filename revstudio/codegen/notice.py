"""The licence notice an exported file carries for the revstudio code it copies.

The layers, the reversible runtime and the input checks are copied into exported files
verbatim; the MIT licence asks that its notice travel with substantial portions. The text
is the repository's LICENSE, word for word (``tests/codegen/test_notice.py`` holds the
two together); the drawn network and the training script written for it are the user's.
"""
from __future__ import annotations

COPYRIGHT = "Copyright (c) 2026 the revstudio developers"

PERMISSION = """\
Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def licence_text() -> str:
    """The LICENSE file's text."""
    return f"MIT License\n\n{COPYRIGHT}\n\n{PERMISSION}"


def notice_comment(version: str) -> str:
    """The comment block above the first section copied from revstudio."""
    lines = [f"The sections marked 'verbatim from revstudio' are copied from revstudio {version},",
             "under the MIT licence:", "", COPYRIGHT, "", *PERMISSION.rstrip("\n").split("\n")]
    return "\n".join(f"# {line}".rstrip() for line in lines) + "\n"
