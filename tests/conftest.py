"""Shared test setup: Qt runs offscreen, set before anything can import Qt."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
