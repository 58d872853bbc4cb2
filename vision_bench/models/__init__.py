"""Image-to-image models on timm backbones, and baselines, behind one interface.

`create_model(name, **options)` builds `unet:<timm cnn>`, `bottleneck:<timm cnn>`,
`vit:<timm vit>`, SVIB's baselines `svib:i2i-cnn`, `svib:i2i-vit` and `svib:oracle`, `copy_input`,
`mean_target` or `ground_truth`; `MODELS` lists them. Every model is an
`ImageToImageModel` (see `vision_bench.models.base` for the interface). Importing this package sets
HF_HUB_OFFLINE=1 (unless already set): weights come from local files only.
"""

from vision_bench.models.base import ImageToImageModel, TrainableModel
from vision_bench.models.registry import MODELS, ModelFamily, create_model

__all__ = ["MODELS", "ImageToImageModel", "ModelFamily", "TrainableModel", "create_model"]
