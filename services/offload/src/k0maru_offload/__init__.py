"""k0maru offload: long logs out of the agent context, session knowledge into the vault."""
