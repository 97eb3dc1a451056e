"""k0maru scanner: reads the vault, owns the manifest and the change journal."""
