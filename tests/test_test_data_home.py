"""The tests never read or write the user's revstudio data folder (tests/conftest.py)."""
from __future__ import annotations

import os
from pathlib import Path

from revstudio.core import app_data


def test_the_data_folder_is_the_test_process_own_not_the_users() -> None:
    users = Path(os.path.expanduser("~")) / ".local" / "share" / "revstudio"
    folder = Path(app_data.data_folder())
    assert folder != users
    assert folder.parent.name.startswith("revstudio-test-data-"), folder

