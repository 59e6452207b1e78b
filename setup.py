"""Build glue that pyproject.toml cannot say: ship ``resources/`` inside the package.

The repository keeps icons, stylesheets and example projects in the top-level
``resources/`` folder. The wheel and sdist carry that folder as the package
``revstudio._resources`` (``package_dir`` maps it; ``**/*`` takes every file in
it, so nobody keeps a list), and ``build_py`` adds the package's
``__init__.py`` so ``importlib.resources`` finds it from a wheel and from a zip.
Everything else (name, version, dependencies, entry points) is in pyproject.toml.
"""
from __future__ import annotations

import os

from setuptools import find_namespace_packages, find_packages, setup
from setuptools.command.build_py import build_py

RESOURCES_PACKAGE = "revstudio._resources"
INIT = '"""The data files of revstudio (resources/ in the repository); see revstudio.resources."""\n'


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads resources/ in place (revstudio.resources)
        folder = os.path.join(self.build_lib, *RESOURCES_PACKAGE.split("."))
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "__init__.py"), "w", encoding="utf-8") as f:
            f.write(INIT)


# resources/ and each folder below it (icons, styles, examples, data, ... found, not listed)
RESOURCE_PACKAGES = [RESOURCES_PACKAGE] + [
    f"{RESOURCES_PACKAGE}.{sub}" for sub in find_namespace_packages(where="resources") if "__pycache__" not in sub
]

setup(
    packages=[*find_packages(include=["revstudio", "revstudio.*"]), *RESOURCE_PACKAGES],
    package_dir={RESOURCES_PACKAGE: "resources"},
    package_data={"revstudio": ["py.typed"], **{name: ["*"] for name in RESOURCE_PACKAGES}},
    exclude_package_data={name: ["*.pyc"] for name in RESOURCE_PACKAGES},
    cmdclass={"build_py": BuildPy},
)
