"""Linear models trained with Fenchel-Young losses."""

from ._fenchel_young import FenchelYoungClassifier

__all__ = ["FenchelYoungClassifier"]
