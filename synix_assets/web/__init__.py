"""Web plumbing shared by `synix ui` and `synix serve`: the request guard and the UI proxy."""
