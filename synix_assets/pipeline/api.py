"""The name every project's `pipeline.py` imports: `from synix_assets.pipeline.api import Pipeline`.

An entry module (the top floor of the layer contract, like synix_assets.dagster_defs.build): the
class is synix_assets.python_api.pipeline.Pipeline, the data class pipeline.spec.PipelineSpec
plus `.branch()`; the rest of synix_assets.pipeline never imports this module.
"""
from synix_assets.python_api.pipeline import Pipeline

__all__ = ["Pipeline"]
