"""The packages, and the repository's top-level configs/ shipped inside the package as `vision_bench.configs`
(read by `vision_bench.config_files`): every folder under configs/ is a package of YAML files, found here so that
a new folder ships without another list to update; everything else about the build is in pyproject.toml."""

from pathlib import Path

from setuptools import find_packages, setup

CONFIGS = Path("configs")
CONFIG_PACKAGES = ["vision_bench.configs"] + sorted(
    "vision_bench.configs." + ".".join(folder.relative_to(CONFIGS).parts)
    for folder in CONFIGS.rglob("*") if folder.is_dir()
)

setup(
    packages=find_packages(include=["render", "render.*", "vision_bench", "vision_bench.*"]) + CONFIG_PACKAGES,
    package_dir={"vision_bench.configs": "configs"},
    package_data={package: ["*.yaml"] for package in CONFIG_PACKAGES},
)
