"""Image-to-image models on timm backbones, and baselines, behind one interface.

`create_model(name, **options)` builds `unet:<timm backbone>`, `bottleneck:<timm backbone>`,
`vit:<timm vit>`, SVIB's baselines `svib:i2i-cnn`, `svib:i2i-vit` and `svib:oracle`, `svib:cell-oracle`,
`copy_input`, `mean_target` or `ground_truth`; `MODELS` lists them. Every model is an
`ImageToImageModel` (see `vision_bench.models.base` for the interface). Backbones start from
scratch unless `pretrained` or `pretrained_file` names weights (`vision_bench.models.timm_weights`).
`save_pretrained` / `load_pretrained` write and read a trained model as a folder or hub id, `push_to_hub`
uploads such a folder (`vision_bench.models.pretrained`, `vision-bench export-model`).
"""

from vision_bench.models.base import ImageToImageModel, TrainableModel
from vision_bench.models.pretrained import load_pretrained, push_to_hub, read_model_config, save_pretrained
from vision_bench.models.registry import MODELS, create_model

__all__ = [
    "MODELS",
    "ImageToImageModel",
    "TrainableModel",
    "create_model",
    "load_pretrained",
    "push_to_hub",
    "read_model_config",
    "save_pretrained",
]
