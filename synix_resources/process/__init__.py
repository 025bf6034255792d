"""What a Synix process needs whatever it runs: signal watching, the project build lock, progress listeners."""
