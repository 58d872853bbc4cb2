"""The packages, and the repository's top-level configs/ shipped inside the package as `vision_bench.configs`
(read by `vision_bench.config_files`); everything else about the build is in pyproject.toml."""

from setuptools import find_packages, setup

CONFIGS = ["vision_bench.configs", "vision_bench.configs.paper", "vision_bench.configs.smoke"]

setup(
    packages=find_packages(include=["render", "render.*", "vision_bench", "vision_bench.*"]) + CONFIGS,
    package_dir={"vision_bench.configs": "configs"},
)
