"""`python -m synix_assets.cli …` = `synix …` (for environments where scripts are not on PATH)."""
from synix_assets.cli.main import main

main(prog_name="synix")
