"""`vision-bench configs`: list the configs that ship with the package, or print one to copy and edit."""

from __future__ import annotations

import argparse

NAME = "configs"
HELP = ("list the packaged configs (the repository's configs/ folder, shipped in the wheel), usable by name or as "
        "configs/NAME.yaml from any folder, e.g. `vision-bench train train_smoke`; --print NAME writes one out")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prefix", nargs="?", default="", help="only names starting with this, e.g. paper/envgen")
    parser.add_argument("--print", dest="show", metavar="NAME",
                        help="print one config's YAML, e.g. `vision-bench configs --print train_smoke > my.yaml`")


def run(args: argparse.Namespace) -> int:
    from vision_bench.config_files import packaged_configs
    from vision_bench.errors import ConfigError, UnknownNameError
    from vision_bench.registry import unknown_name_message

    configs = packaged_configs()
    if args.show:
        if args.prefix:
            raise ConfigError(f"give a prefix to list or --print NAME, not both (got {args.prefix!r} and "
                              f"{args.show!r})")
        name = args.show.removeprefix("configs/").removesuffix(".yaml")
        if name not in configs:
            raise UnknownNameError(unknown_name_message("packaged config", args.show, list(configs)))
        print(configs[name].read_text(encoding="utf-8"), end="")
        return 0
    names = [name for name in configs if name.startswith(args.prefix)]
    if not names:
        raise UnknownNameError(f"no packaged config starts with {args.prefix!r}; run `vision-bench configs` to list "
                               "them all")
    width = max(map(len, names))
    for name in names:
        print(f"{name:<{width}}  {_summary(configs[name].read_text(encoding='utf-8'))}")
    return 0


def _summary(text: str) -> str:
    """The config's first comment line (what it runs), without the `#`."""
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""
