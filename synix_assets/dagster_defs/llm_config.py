"""The `llm` resource as the Launchpad sees it: every field configurable except the provider and
the model.

The code versions Dagster shows fold in the provider and model the environment named when the
definitions loaded (graph.code_versions). A run recording another model's output under them
would make Dagster call fresh what `synix plan` calls stale, so such a run must not exist: with
`provider` and `model` left out of the config schema, Dagster's own config validation refuses
the override before the run is created (the Launchpad shows the error and does not launch).
A refusal inside a step would come too late: Dagster marks every partition a failed run had
planned as Failed, and a no-op `synix run` launches no run that could clear them.
"""
from __future__ import annotations

import dagster as dg

from synix_resources.llm.resource import LLMResource

FIXED = ("provider", "model")  # they name the identity the code versions were computed for


def launchpad_llm(llm: LLMResource, identity: str) -> dg.ResourceDefinition:
    """`llm` (as the environment configured it) with only its other fields open to run config;
    `identity`: its `provider:model`, shown in the resource's description."""
    fields = LLMResource.to_config_schema().as_field().config_type.fields
    # no defaults: only what a run's config names is applied over `llm`'s own values
    schema = {name: dg.Field(field.config_type, is_required=False, description=field.description)
              for name, field in fields.items() if name not in FIXED}
    values = {name: getattr(llm, name) for name in fields}

    @dg.resource(config_schema=schema, description=(
        f"Every LLM call of a Synix build: {identity}. The provider and model come from the "
        f"environment (SYNIX_LLM_PROVIDER / SYNIX_LLM_MODEL, or ANTHROPIC_API_KEY) and are not "
        f"run config: the code versions Dagster shows were computed for them; set them and "
        f"reload definitions to use another model."))
    def _llm(init_context):
        resource = LLMResource(**{**values, **init_context.resource_config})
        try:
            yield resource
        finally:
            resource.teardown_after_execution(init_context)

    return _llm
