"""``revstudio memory`` output a reviewer can cite: the versions, threads and network measured beside the
bytes, so a depth sweep's rows say which network each is (and reversible mode's peak stays flat)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from revstudio.cli import main
from revstudio.core.digest import network_digest
from revstudio.core.project import load

ROOT = Path(__file__).resolve().parents[1]
COUPLING = ROOT / "resources" / "examples" / "revnet_coupling.revs"


def _at_depth(tmp_path: Path, times: int) -> Path:
    doc = json.loads(COUPLING.read_text(encoding="utf-8"))
    next(n for n in doc["nodes"] if n["id"] == "blocks")["params"]["times"] = times
    path = tmp_path / f"depth{times}.revs"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_depth_sweep_names_each_network_and_where_it_was_measured(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    measured = {}
    for times in (2, 6):
        path = _at_depth(tmp_path, times)
        assert main(["memory", str(path), "--batch", "4", "--repeat", "1", "--json"]) == 0
        measured[times] = out = json.loads(capsys.readouterr().out)
        assert out["network_digest"] == network_digest(load(path))
        assert out["versions"]["torch"] == torch.__version__ and out["threads"] == torch.get_num_threads()
    assert measured[2]["network_digest"] != measured[6]["network_digest"]
    peaks = {t: {m: v["peak_bytes"] for m, v in out["modes"].items()} for t, out in measured.items()}
    assert peaks[6]["reversible"] == peaks[2]["reversible"] and peaks[6]["standard"] > 2 * peaks[2]["standard"]
    assert main(["memory", str(_at_depth(tmp_path, 2)), "--batch", "4", "--repeat", "1"]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.startswith(f"  revstudio {measured[2]['versions']['revstudio']}, torch {torch.__version__}, ")
    assert line.endswith(f"; network {measured[2]['network_digest'][:19]}")


def test_the_depth_sweep_names_the_versions_once_and_each_depths_network(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    assert main(["memory", str(COUPLING), "--batch", "2", "--depth", "2,6", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["versions"]["torch"] == torch.__version__ and data["threads"] == torch.get_num_threads()
    assert "network_digest" not in data  # one network a depth, so one digest a row
    digests = [row["network_digest"] for row in data["rows"]]
    # each row's digest is the one plain `memory` gives that project saved at that depth
    assert digests == [network_digest(load(_at_depth(tmp_path, t))) for t in (2, 6)]
    assert digests[0] != digests[1]
    assert main(["memory", str(COUPLING), "--batch", "2", "--depth", "2,6"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith(f"  revstudio {data['versions']['revstudio']}, torch {torch.__version__}, ")
    assert lines[2].split()[-1] == "network"
    assert [line.split()[-1] for line in lines[3:5]] == [d[:19] for d in digests]
