"""Exported models and the Hugging Face hub, without the network: a hub id with a revision is read from a
snapshot laid out in a temporary hub cache (downloads off), and `push_to_hub` is checked by recording the calls
it makes to huggingface_hub's `HfApi` and the files of the folder it uploads."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from cli_errors import cli_error

from vision_bench.models import create_model, load_pretrained, push_to_hub, read_model_config, save_pretrained
from vision_bench.models.pretrained import ModelFolderError, hub_reference, push_target

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIZE = 32
REPO = "someone/grid-cnn"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """bottleneck:test_resnet (with its timm encoder in encoder/) saved with fixed weights."""
    torch.manual_seed(0)
    model = create_model("bottleneck:test_resnet", image_size=SIZE, decoder_width=4, latent_dim=8).eval()
    out = tmp_path_factory.mktemp("hub") / "model"
    save_pretrained(model, out)
    return out


def images() -> torch.Tensor:
    return torch.rand(2, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(3))


def hub_cache(root: Path, folder: Path, refs: dict[str, str]) -> Path:
    """`folder` as the snapshot of commit COMMIT of REPO in a hub cache at `root` (huggingface_hub's layout:
    models--USER--NAME/snapshots/COMMIT/FILES and refs/REVISION holding the commit)."""
    repo = root / f"models--{REPO.replace('/', '--')}"
    shutil.copytree(folder, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir(parents=True)
    for revision, commit in refs.items():
        (repo / "refs" / revision).write_text(commit)
    return root


@pytest.fixture
def offline_cache(exported, tmp_path, monkeypatch) -> Path:
    cache = hub_cache(tmp_path / "hub", exported, {"v1": COMMIT})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def test_a_hub_id_with_a_revision_loads_from_the_cache_offline(exported, offline_cache) -> None:
    expected = load_pretrained(exported)(images())
    for source, revision in (("someone/grid-cnn@v1", None), ("hf://someone/grid-cnn@v1", None),
                             ("someone/grid-cnn", "v1"), (f"{REPO}@{COMMIT}", None)):
        assert torch.equal(load_pretrained(source, revision=revision)(images()), expected), (source, revision)
    assert read_model_config(REPO, revision="v1")["architecture"] == "bottleneck:test_resnet"


def test_a_revision_the_cache_lacks_is_one_line(offline_cache) -> None:
    for source, revision in ((REPO, None), (REPO, "v2"), (f"{REPO}@{OTHER_COMMIT}", None)):
        with pytest.raises(ModelFolderError, match="neither a folder here nor a model in the Hugging Face cache") \
                as caught:
            load_pretrained(source, revision=revision)
        assert len(str(caught.value).splitlines()) == 1


def test_revisions_are_spelled_once_and_only_for_hub_ids(exported, offline_cache) -> None:
    assert hub_reference("user/model") == ("user/model", None)
    assert hub_reference("hf://user/model@refs/pr/1") == ("user/model", "refs/pr/1")
    assert hub_reference("hf:/user/model", "v2") == ("user/model", "v2")  # what pathlib makes of hf://
    assert hub_reference("model") is None and hub_reference("user/model@") == ("user/model", None)
    assert hub_reference("user/model@bad revision") is None
    with pytest.raises(ModelFolderError, match="names revision 'v1' and revision='v2' another"):
        load_pretrained(f"{REPO}@v1", revision="v2")
    with pytest.raises(ModelFolderError, match="is a folder, which has no revision 'v1'"):
        load_pretrained(exported, revision="v1")


class RecordingApi:
    """Stands in for huggingface_hub.HfApi: records each call, and the files `upload_folder` would send."""

    calls: list[tuple] = []
    uploaded: dict[str, bytes] = {}

    def __init__(self, token=None, library_name=None, library_version=None) -> None:
        RecordingApi.calls.append(("HfApi", token, library_name))

    def create_repo(self, repo_id, *, private=None, exist_ok=False):
        RecordingApi.calls.append(("create_repo", repo_id, private, exist_ok))
        return SimpleNamespace(repo_id=repo_id)

    def create_branch(self, repo_id, *, branch, exist_ok=False):
        RecordingApi.calls.append(("create_branch", repo_id, branch, exist_ok))

    def upload_folder(self, *, repo_id, folder_path, revision, allow_patterns, delete_patterns, commit_message):
        from huggingface_hub.utils import filter_repo_objects

        folder = Path(folder_path)
        names = [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*")) if p.is_file()]
        RecordingApi.uploaded = {name: (folder / name).read_bytes()
                                 for name in filter_repo_objects(names, allow_patterns=allow_patterns)}
        RecordingApi.calls.append(("upload_folder", repo_id, revision, sorted(delete_patterns), commit_message))
        return SimpleNamespace(commit_url=f"https://huggingface.co/{repo_id}/commit/{COMMIT}")


@pytest.fixture
def recording_api(monkeypatch):
    import huggingface_hub

    RecordingApi.calls, RecordingApi.uploaded = [], {}
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("VISION_BENCH_OFFLINE", raising=False)
    return RecordingApi


def test_push_to_hub_uploads_the_exports_files_to_a_branch(exported, recording_api) -> None:
    (exported.parent / "elsewhere.txt").write_text("not part of the export")
    url = push_to_hub(exported, f"{REPO}@v2", private=True, token="secret")
    assert url == f"https://huggingface.co/{REPO}/commit/{COMMIT}"
    patterns = ["README.md", "config.json", "encoder.safetensors", "encoder/*", "model.safetensors"]
    assert recording_api.calls == [
        ("HfApi", "secret", "vision-bench"),
        ("create_repo", REPO, True, True),
        ("create_branch", REPO, "v2", True),
        ("upload_folder", REPO, "v2", patterns, "vision-bench export-model: bottleneck:test_resnet"),
    ]
    files = {p.relative_to(exported).as_posix(): p.read_bytes() for p in exported.rglob("*") if p.is_file()}
    assert recording_api.uploaded == files
    assert set(files) == {"README.md", "config.json", "model.safetensors", "encoder/config.json",
                          "encoder/model.safetensors"}


def test_push_to_main_makes_no_branch(exported, recording_api) -> None:
    push_to_hub(exported, REPO, commit_message="first model")
    assert [call[0] for call in recording_api.calls] == ["HfApi", "create_repo", "upload_folder"]
    assert recording_api.calls[-1][2] is None and recording_api.calls[-1][-1] == "first model"


def test_push_refuses_an_unfinished_export_a_bad_id_and_the_hub_switched_off(
        exported, tmp_path, recording_api, monkeypatch) -> None:
    unfinished = tmp_path / "unfinished"
    shutil.copytree(exported, unfinished)
    (unfinished / "config.json").unlink()
    with pytest.raises(ModelFolderError, match="no config.json"):
        push_to_hub(unfinished, REPO)
    with pytest.raises(ModelFolderError, match="'grid-cnn' is not a hub repository id"):
        push_to_hub(exported, "grid-cnn")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelFolderError, match=r"the Hugging Face hub is off \(\$HF_HUB_OFFLINE"):
        push_target(REPO)
    assert recording_api.calls == []  # refused before the client was made


def test_without_the_hub_client_hub_ids_and_pushes_are_one_line(exported, monkeypatch) -> None:
    from vision_bench.io.extras import MissingPackageError

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # `import huggingface_hub` raises ImportError
    for call in (lambda: load_pretrained(REPO), lambda: push_to_hub(exported, REPO)):
        with pytest.raises(MissingPackageError, match=r"needs the huggingface_hub package.*vision-bench\[hf\]") \
                as caught:
            call()
        assert len(str(caught.value).splitlines()) == 1
    assert torch.equal(load_pretrained(exported)(images()), load_pretrained(exported)(images()))  # folders need none


def test_export_model_refuses_a_push_it_cannot_make_before_any_work(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cli_error(["export-model", tmp_path / "no-run", "--out", tmp_path / "out", "--push-to-hub", REPO], capsys,
              "the Hugging Face hub is off")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    cli_error(["export-model", tmp_path / "no-run", "--out", tmp_path / "out", "--push-to-hub", "a/b/c"], capsys,
              "'a/b/c' is not a hub repository id")
    assert not (tmp_path / "out").exists()
